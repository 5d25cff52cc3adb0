"""``negbench report`` and ``negbench compare``.

Also runnable as ``python -m negbench report RUN…`` / ``… compare A B``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from negbench.errors import NegbenchError, OutputError
from negbench.options import fraction, whole_number

REPORT_EPILOG = """examples:
  negbench report runs/gemma3-270m__nubench                      # -> runs/gemma3-270m__nubench/report/
  negbench report runs/base runs/sft --out reports/sft           # tables with an "After SFT" column + comparison
  negbench report runs/a runs/b runs/c --group "small=a,b" --label a --label b --label c
  open report.html#filter=incorrect&task=nubench&error=local     # a filtered view is a link
"""

COMPARE_EPILOG = """examples:
  negbench compare runs/base runs/lora                 # per benchmark: Δ, flips, McNemar, bootstrap
  negbench compare runs/a runs/b --tasks nubench --out cmp/ --bootstrap 20000
"""


def _labels(xs: list[str] | None) -> list[str | None] | None:
    return list(xs) if xs else None


def _groups(xs: list[str] | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for g in xs or []:
        if "=" not in g:
            raise OutputError(
                f"--group expects NAME=LABEL,LABEL…, got {g!r}",
                where="--group",
                fix='e.g. --group "7-8B models=Llama-3.1-8B,Qwen2.5-7B"',
            )
        name, members = g.split("=", 1)
        out[name.strip()] = [m.strip() for m in members.split(",") if m.strip()]
    return out


def _formats(s: str) -> list[str]:
    from negbench.report.build import FORMATS

    fs = [x.strip() for x in s.split(",") if x.strip()]
    bad = [f for f in fs if f not in FORMATS]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown format(s) {', '.join(bad)}; choose from {', '.join(FORMATS)}"
        )
    return fs


def add_parser(sub) -> None:
    """Add the ``report`` and ``compare`` commands to an argparse subparsers object."""
    r = sub.add_parser(
        "report",
        help="tables, plots and an HTML report from saved runs (no model)",
        description="Paper-shaped tables (Markdown, LaTeX), plots, one self-contained "
        "HTML file with per-sample browsing, comparisons against a baseline run, and "
        "machine-readable report.json + CSV files, from one or more run folders. No "
        "model is loaded.",
        epilog=REPORT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run folders (written by 'negbench run'), "
        "experiment folders (negbench experiment: the matrix and its heatmap), or "
        "profile folders (negbench profile: its page; several: their comparison)",
    )
    r.add_argument(
        "--out",
        "-o",
        default=None,
        help="report folder (default: RUN/report for one run, ./negbench-report for several or "
        "when RUN is read-only); the run folders are only read",
    )
    r.add_argument(
        "--label",
        action="append",
        default=None,
        help="a display name per run, in order (default: the model name)",
    )
    r.add_argument(
        "--group",
        action="append",
        default=None,
        metavar="NAME=LABEL,…",
        help="a model group for average rows and plot lines (NUBench Table 11 / Figure 3)",
    )
    r.add_argument(
        "--baseline",
        type=whole_number(0),
        default=0,
        help="index of the run the others are compared with (default: 0, the first)",
    )
    r.add_argument("--no-compare", action="store_true", help="no comparisons between runs")
    r.add_argument(
        "--formats",
        type=_formats,
        default=None,
        help="comma-separated: md,tex,html,json,csv,plots (default: all)",
    )
    r.add_argument("--no-plots", action="store_true", help="skip the plots (faster)")
    r.add_argument(
        "--recompute",
        action="store_true",
        help="recompute every metric from the samples (as 'negbench rescore', in memory)",
    )
    r.add_argument(
        "--max-samples",
        type=whole_number(1),
        default=None,
        help="samples per unit kept in the HTML browser (default: all, unless the "
        "runs hold more than 30,000 samples in all)",
    )
    r.add_argument(
        "--all-samples",
        action="store_true",
        help="keep every sample in the HTML browser, however many",
    )
    add_bootstrap_args(r)
    r.add_argument(
        "--alpha", type=fraction(0, 1), default=0.05, help="significance level (default: 0.05)"
    )
    r.add_argument("--force", action="store_true", help="compare runs even when their data differ")
    r.add_argument("--title", default=None, help="report title")
    r.add_argument("--no-text", action="store_true", help=NO_TEXT_HELP)
    r.set_defaults(func=run_report)

    c = sub.add_parser(
        "compare",
        help="compare two runs item by item, with significance tests",
        description="Pair the items of two runs (two models, or a model before / "
        "after fine-tuning) by doc id; per benchmark group: scores, Δ, flipped items, "
        "McNemar's test (exact and χ²) and a paired bootstrap over documents.",
        epilog=COMPARE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("a", metavar="RUN_A", help="the reference run (e.g. the base model)")
    c.add_argument("b", metavar="RUN_B", help="the run compared with it (e.g. after fine-tuning)")
    c.add_argument(
        "--tasks", default=None, help="comma-separated tasks to compare (default: all shared)"
    )
    c.add_argument(
        "--out",
        "-o",
        default=None,
        help="folder for compare.json, compare.md, CSVs and compare.html (default: print only)",
    )
    c.add_argument("--json", action="store_true", help="print the JSON (schema negbench.compare/1)")
    c.add_argument("--label-a", default=None)
    c.add_argument("--label-b", default=None)
    add_bootstrap_args(c)
    c.add_argument(
        "--alpha", type=fraction(0, 1), default=0.05, help="significance level (default: 0.05)"
    )
    c.add_argument(
        "--flips", type=whole_number(0), default=20, help="flipped items to print (default: 20)"
    )
    c.add_argument("--force", action="store_true", help="pair items even when the data differ")
    c.add_argument("--no-text", action="store_true", help=NO_TEXT_HELP)
    c.set_defaults(func=run_compare)


#: The help text's copy of scoring.intervals.BOOTSTRAP_RESAMPLES / BOOTSTRAP_SEED (a test keeps them
#: equal): importing the statistics to build the parser would slow every negbench command.
BOOTSTRAP_HELP = (
    "bootstrap resamples (default: 10,000, the same for negbench report, compare and train)",
    "bootstrap seed (default: 0)",
)


def add_bootstrap_args(p) -> None:
    """--bootstrap and --seed, one default for every comparison (None: that default)."""
    p.add_argument("--bootstrap", type=whole_number(1), default=None, help=BOOTSTRAP_HELP[0])
    p.add_argument("--seed", type=whole_number(0), default=None, help=BOOTSTRAP_HELP[1])


def bootstrap_options(args) -> dict:
    """The comparison's resamples and seed: the options given, else the one default."""
    from negbench.scoring.intervals import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED

    return {
        "n_resamples": BOOTSTRAP_RESAMPLES if args.bootstrap is None else args.bootstrap,
        "seed": BOOTSTRAP_SEED if args.seed is None else args.seed,
    }


NO_TEXT_HELP = (
    "leave the dataset's text out of every file written (prompts, sentences, "
    "choices' wording, outputs, answer texts): a report to share where the data may "
    "not go; ids, labels, scores and correctness stay"
)


def default_out(runs: list[str]) -> Path:
    """Where a report goes without --out: ``RUN/report`` for one run whose folder can be written,
    else ``./negbench-report`` (a read-only run folder is reported, never written to)."""
    if len(runs) == 1:
        run = Path(runs[0])
        target = run / "report"
        probe = target if target.is_dir() else run
        if os.access(probe, os.W_OK | os.X_OK):
            return target
        print(
            f"note: {run} is not writable; the report goes to ./negbench-report "
            "(choose another folder with --out)",
            file=sys.stderr,
        )
    return Path("negbench-report")


def run_report(args) -> int:
    from negbench.profile.folder import is_profile

    if any(is_profile(r) for r in args.runs):  # negation profiles: their own page
        return report_profiles(args)
    from negbench.report.build import FORMATS, build, write
    from negbench.report.matrix import experiment_title, with_experiments

    formats = list(args.formats or FORMATS)
    if args.no_plots and "plots" in formats:
        formats.remove("plots")
    want_plots = not args.no_plots and ("plots" in formats or "html" in formats)
    rep = with_experiments(build)(
        args.runs,
        labels=_labels(args.label),
        groups=_groups(args.group),
        baseline=None if args.no_compare else args.baseline,
        recompute=args.recompute,
        plots=want_plots,
        **bootstrap_options(args),
        alpha=args.alpha,
        max_samples_per_unit=args.max_samples,
        force=args.force,
        all_samples=args.all_samples,
        text=not args.no_text,
    )
    out = Path(args.out) if args.out else default_out(args.runs)
    files = write(rep, out, formats, args.title or experiment_title(rep))
    print(
        f"{len(rep.runs)} run(s): {len(rep.tables)} table(s), {len(rep.plots)} plot(s), "
        f"{len(rep.comparisons)} comparison(s), {len(rep.views)} samples"
    )
    for w in rep.warnings:
        print(f"warning: {w}", file=sys.stderr)
    for k in ("html", "md", "tex", "json"):
        if k in files:
            print(f"{k}: {out / files[k]}")
    if any(k.startswith("csv/") for k in files):
        print(f"csv: {out / 'csv'}/")
    if "plots" in files:
        print(f"plots: {out / 'plots'}/")
    return 0


def report_profiles(args) -> int:
    """``negbench report PROFILE``: the profile's page written again (no model); several
    profiles: their comparison (``negbench profile compare``) into ``--out``."""
    from negbench.profile.folder import is_profile

    others = [r for r in args.runs if not is_profile(r)]
    if others:
        raise OutputError(
            f"{others[0]} is a run folder and the others are profiles",
            where="RUN",
            fix="report run folders and profile folders separately",
        )
    if len(args.runs) == 1:
        from negbench.profile.page import write_profile_page

        files = write_profile_page(args.runs[0])
        for k in ("html", "md", "json", "model_card", "lm_eval"):
            if k in files:
                print(f"{k}: {Path(args.runs[0]) / files[k]}")
        return 0
    from negbench.profile.compare import compare_profiles, summary_text, write_comparison

    pc = compare_profiles(
        args.runs, labels=args.label, **bootstrap_options(args), alpha=args.alpha, force=args.force
    )
    print(summary_text(pc))
    out = Path(args.out) if args.out else Path("negbench-report")
    for k, v in write_comparison(pc, out).items():
        print(f"{k}: {out / v}")
    return 0


def run_compare(args) -> int:
    from negbench.report.build import NO_TEXT_NOTE, leave_out_text, sample_views
    from negbench.report.compare import compare_runs, to_markdown
    from negbench.report.html import render
    from negbench.scoring.runs import load_runs
    from negbench.files import atomic_write_text, to_json, write_json

    a, b = load_runs([args.a, args.b], [args.label_a, args.label_b])
    tasks = [t.strip() for t in args.tasks.split(",")] if args.tasks else None
    cmp = compare_runs(a, b, tasks, **bootstrap_options(args), alpha=args.alpha, force=args.force)
    notes = []
    if args.no_text:
        leave_out_text([], [cmp])
        notes = [NO_TEXT_NOTE]
    data = {k: v for k, v in cmp.items() if not k.startswith("_")}
    if args.json:
        print(to_json(data, indent=1))
    else:
        print(to_markdown(cmp, args.flips))
    if args.out:
        from negbench.report import csv_export

        out = Path(args.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create {out} ({exc.strerror})", where="--out") from exc
        write_json(out / "compare.json", data)
        atomic_write_text(
            out / "compare.md",
            to_markdown(cmp, max_flips=10**9) + "\n" + "".join(f"\n*{n}*\n" for n in notes),
        )
        cmp["_id"] = "cmp0"
        csv_export.write_all(out / "csv", [a, b], comparisons=[cmp])
        units = {u for g in cmp["groups"] for u in g["units"]}
        for r in (a, b):  # the browser holds the compared units only
            r.units = {k: v for k, v in r.units.items() if k in units}
        views = sample_views([a, b], [cmp])
        if args.no_text:
            leave_out_text(views)
        atomic_write_text(
            out / "compare.html",
            render(
                title=f"negbench comparison: {a.label} vs {b.label}",
                runs=[a.summary(), b.summary()],
                tables=[],
                plots=[],
                comparisons=[cmp],
                samples=views,
                warnings=cmp["warnings"],
                notes=notes,
            ),
        )
        if not args.json:
            print(
                f"\njson: {out / 'compare.json'}\nhtml: {out / 'compare.html'}\ncsv: {out / 'csv'}/"
            )
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="negbench", description="negbench reports")
    add_parser(p.add_subparsers(dest="command", metavar="COMMAND", required=True))
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except NegbenchError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
