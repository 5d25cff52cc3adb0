"""``negbench human-eval sheet|score``: human-evaluation sheets for a sample of a set, and the
papers' tables from filled sheets (:mod:`negbench.builders.human_eval`)."""

from __future__ import annotations


from negbench.options import whole_number as _int


def add_parser(sub) -> None:
    he = sub.add_parser(
        "human-eval",
        help="human evaluation sheets (This is not a Dataset "
        "Table 3, Thunder-KoNUBench Table 7): write them, or score filled ones",
        description="'sheet' draws N items (seeded) of a released or built set and "
        "writes sheet.csv / sheet.md for the people and key.csv; 'score' reads "
        "key.csv and one filled sheet.csv per person and prints Table 3 "
        "(notadataset: four questions per sentence, % per annotator, A∩B, A∪B, "
        "Cohen's and Fleiss' kappa) or Table 7 (nubench / konubench: answer the "
        "item; Max, Min, Median, Average of scores out of 100). The sheets hold "
        "test items: keep them out of the repository and of training data. "
        "See docs/human_eval.md.",
    )
    hes = he.add_subparsers(dest="human_action", required=True)
    hs = hes.add_parser("sheet", help="write sheet.csv, sheet.md and key.csv")
    hs.add_argument(
        "--task",
        default="konubench",
        help="the benchmark whose items are drawn (default: konubench): konubench / "
        "nubench test items to answer (Table 7), notadataset sentences to judge "
        "(Table 3); any other registered task with a multiple-choice mode gets "
        "an answer sheet of that mode's prompts",
    )
    hs.add_argument(
        "--source",
        default=None,
        metavar="FILE|DIR",
        help="draw from this copy of the set instead of the release: the output of "
        "'negbench build notadataset' (its raw/ folder) or 'negbench build mcq', "
        "or any source the task's loader accepts",
    )
    hs.add_argument("--out", required=True, help="output folder")
    hs.add_argument(
        "--n",
        type=_int(1),
        default=None,
        help="items (default: 220 for notadataset "
        "as §3.2, 50 for konubench as §4.3 and for nubench)",
    )
    hs.add_argument(
        "--seed", type=int, default=0, help="sampling seed (default: 0; the papers give none)"
    )
    hs.add_argument(
        "--stratify",
        default=None,
        metavar="FIELD",
        help="proportional stratified draw by this field (notadataset: pattern, "
        "negation_type, label, distractor; nubench: choice2_type); default: a "
        "plain random draw, as the papers",
    )
    hc = hes.add_parser("score", help="score filled sheets (one CSV per participant)")
    hc.add_argument("key", help="key.csv written by 'sheet'")
    hc.add_argument("filled", nargs="+", help="filled sheet.csv files, one per participant")
    hc.add_argument("--json", default=None, help="also write the scores as JSON here")
    he.set_defaults(func=run)


def run(args) -> int:
    """The people's sheet for a sample of a set, or Table 3 / Table 7 from filled sheets."""
    from negbench.builders import human_eval as sheets

    if args.human_action == "sheet":
        from negbench.files import check_writable_folder

        check_writable_folder(args.out, "--out")
        paths = sheets.write_sheet(
            args.task, args.out, args.n, args.seed, args.source, args.stratify
        )
        for what, path in paths.items():
            print(f"{what}: {path}")
        return 0
    res, text = sheets.score(args.key, args.filled)
    print(text)
    if args.json:
        from negbench.files import write_json

        write_json(args.json, res, indent=1)
    return 0
