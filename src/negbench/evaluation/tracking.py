"""Experiment trackers: a finished evaluation (``negbench run --report-to``) or a training
(``negbench train --report-to``, transformers' Trainer ``report_to``) logged to TensorBoard,
Weights & Biases or MLflow, beside the run folder that stays the record.

An evaluation is logged as one tracker run named after its folder: every numeric metric of every
unit as a scalar (``<unit>/<metric>``, nested analyses joined with dots), the whole list as one
table (unit, task, mode, shots, seed, metric, value), and the run's configuration (model,
tasks, modes, shots, seeds, limit, versions, commit, data fingerprints).  Undefined metrics
(NaN) are left out of the scalars and are empty cells in the table.

Each tracker is an optional extra and is set up the way its own tools are:

* ``tensorboard`` (``pip install 'negbench[tensorboard]'``): event files in ``RUN/tensorboard``
  (a training: ``OUT/logs``), or in ``$TENSORBOARD_LOGGING_DIR``; the table and the
  configuration are Markdown text (TensorBoard's Text tab);
* ``wandb`` (``'negbench[wandb]'``): project ``$WANDB_PROJECT`` (default ``negbench``); a
  login (``wandb login`` or ``$WANDB_API_KEY``), or ``WANDB_MODE=offline`` to write the run
  under ``./wandb`` for a later ``wandb sync``;
* ``mlflow`` (``'negbench[mlflow]'``, the client ``mlflow-skinny``): ``$MLFLOW_TRACKING_URI``
  (a tracking server ``http://…``; ``sqlite:///mlflow.db``, MLflow's default, needs the full
  ``mlflow`` package; ``file:./mlruns`` needs ``MLFLOW_ALLOW_FILE_STORE=true``) and experiment
  ``$MLFLOW_EXPERIMENT_NAME`` (default ``negbench``); ``results.json`` and ``config.json`` are
  attached as artifacts.

Everything is checked before the run starts (:func:`check_trackers`), so a missing package or
login stops it before a model loads.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import re
from pathlib import Path
from typing import Any, Iterator

from negbench.errors import NegbenchError, OptionError, missing_module_error

TRACKERS = ("tensorboard", "wandb", "mlflow")
DEFAULT_PROJECT = "negbench"
TABLE_COLUMNS: list[Any] = ["unit", "task", "mode", "shots", "seed", "metric", "value"]


def report_to(s: str) -> list[str]:
    """argparse type of ``--report-to``: ``none`` or comma-separated tracker names."""
    names = [x.strip().lower() for x in s.split(",") if x.strip()]
    if names == ["none"]:
        return []
    bad = [x for x in names if x not in TRACKERS]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown tracker {', '.join(bad) or repr(s)}; choose "
            f"none or any of {', '.join(TRACKERS)} (comma-separated)"
        )
    return list(dict.fromkeys(names))


REPORT_TO_HELP = (
    "log to experiment trackers, comma-separated: tensorboard, wandb, mlflow "
    "(default: none); each is an extra (pip install -c constraints.txt "
    "'negbench[tensorboard]') set up by its own environment variables "
    "(docs/tracking.md)"
)


# -- checks before anything runs ------------------------------------------------------------------
def check_trackers(targets: list[str]) -> None:
    """Each tracker can be used here: its package is installed, MLflow's store can be opened by
    the installed client, W&B has a login or runs offline."""
    for t in targets:
        module = {"tensorboard": "tensorboard", "wandb": "wandb", "mlflow": "mlflow"}[t]
        if importlib.util.find_spec(module) is None:
            raise missing_module_error(module) or NegbenchError(f"{t} is not installed")
        if t == "mlflow":
            _check_mlflow_store()
        elif t == "wandb":
            _check_wandb_login()


def _check_mlflow_store() -> None:
    import mlflow

    uri = mlflow.get_tracking_uri()
    scheme = uri.split(":", 1)[0].lower() if ":" in uri else "file"
    if (
        scheme in ("sqlite", "postgresql", "mysql", "mssql")
        and importlib.util.find_spec("sqlalchemy") is None
    ):
        raise OptionError(
            f"MLflow's tracking store {uri} is a database, which the MLflow "
            "client installed here (mlflow-skinny) cannot open (no SQLAlchemy)",
            where="--report-to mlflow (MLFLOW_TRACKING_URI)",
            fix="set MLFLOW_TRACKING_URI to a tracking server (http://HOST:5000), "
            "or pip install mlflow for a local database, or use a folder: "
            "MLFLOW_TRACKING_URI=file:./mlruns MLFLOW_ALLOW_FILE_STORE=true",
        )
    if scheme == "file" and os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() not in (
        "true",
        "1",
    ):
        raise OptionError(
            f"MLflow's tracking store {uri} is a folder, which MLflow accepts only "
            "with MLFLOW_ALLOW_FILE_STORE=true",
            where="--report-to mlflow (MLFLOW_TRACKING_URI)",
            fix="export MLFLOW_ALLOW_FILE_STORE=true, or set MLFLOW_TRACKING_URI "
            "to a tracking server (http://HOST:5000)",
        )


def _check_wandb_login() -> None:
    """A login where ``wandb login`` keeps it (``$WANDB_API_KEY``, an identity token file, or
    the W&B host's entry in ~/.netrc), unless W&B runs offline."""
    mode = os.environ.get("WANDB_MODE", "").lower()
    if (
        mode in ("offline", "disabled", "dryrun")
        or os.environ.get("WANDB_API_KEY")
        or os.environ.get("WANDB_IDENTITY_TOKEN_FILE")
    ):
        return
    import netrc
    from urllib.parse import urlsplit

    host = urlsplit(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname
    try:
        found = netrc.netrc(os.environ.get("NETRC")).authenticators(host or "") is not None
    except (OSError, netrc.NetrcParseError):
        found = False
    if not found:
        raise OptionError(
            f"no Weights & Biases login found for {host} (WANDB_API_KEY, ~/.netrc)",
            where="--report-to wandb",
            fix="run 'wandb login' (or set WANDB_API_KEY), or set "
            "WANDB_MODE=offline to write the run under ./wandb and "
            "'wandb sync' it later",
        )


# -- what is logged ---------------------------------------------------------------------------------
def _numbers(obj: Any, prefix: str = "") -> Iterator[tuple[str, float | None]]:
    """(dotted name, value) of every number in a nested metrics object; NaN / inf → None."""
    if isinstance(obj, bool):
        return
    if isinstance(obj, (int, float)):
        v = float(obj)
        yield prefix, (v if math.isfinite(v) else None)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(v, f"{prefix}.{k}" if prefix else str(k))


def metric_rows(results: dict) -> list[list]:
    """The table of a run: one row per unit and numeric metric (:data:`TABLE_COLUMNS`)."""
    rows = []
    for name, u in results["units"].items():
        for metric, v in _numbers(u.get("metrics") or {}):
            rows.append(
                [name, u.get("task"), u.get("mode"), u.get("shots"), u.get("seed"), metric, v]
            )
    return rows


def scalars(results: dict) -> dict[str, float]:
    """``<unit>/<metric>`` → value for every defined metric (the trackers' scalar view)."""
    return {f"{r[0]}/{r[5]}": r[6] for r in metric_rows(results) if r[6] is not None}


def run_config(results: dict, folder: str | Path | None = None) -> dict[str, Any]:
    """What made the run, flat: the command's settings, versions, commit, data fingerprints."""
    cfg = dict(results.get("config") or {})
    out: dict[str, Any] = {
        k: cfg.get(k)
        for k in ("model", "tasks", "modes", "shots", "seeds", "limit", "protocol", "chat")
    }
    for k, v in (cfg.get("backend") or {}).items():
        out[f"backend.{k}"] = v
    out["negbench"] = results.get("negbench")
    out["model.fingerprint"] = (results.get("model") or {}).get("fingerprint")
    git = (results.get("provenance") or {}).get("git") or {}
    out["git.commit"] = git.get("commit")
    for task, splits in (results.get("datasets") or {}).items():
        for split, info in (splits or {}).items():
            if isinstance(info, dict) and info.get("sha256"):
                out[f"data.{task}.{split}.sha256"] = info["sha256"]
    if folder is not None:
        out["run_folder"] = str(Path(folder).absolute())
    return out


def _markdown(head: list[str], rows: list[list]) -> str:
    cell = lambda v: "" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))
    return "\n".join(
        ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        + ["| " + " | ".join(cell(v).replace("|", "\\|") for v in r) + " |" for r in rows]
    )


# -- logging a finished run ------------------------------------------------------------------------
def log_run(results: dict, folder: str | Path, targets: list[str]) -> list[str]:
    """Log a finished run (its results.json, in ``folder``) to each tracker; returns one line per
    tracker saying where it went."""
    folder = Path(folder)
    done, failed = [], []
    for t in targets:
        try:
            done.append(
                {"tensorboard": _tensorboard, "wandb": _wandb, "mlflow": _mlflow}[t](
                    results, folder, folder.name
                )
            )
        except Exception as exc:  # the tracker's own failure (network, store)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            failed.append(f"{t}: {type(exc).__name__}: {first}")
    if failed:
        raise NegbenchError(
            f"the run is saved in {folder}, but logging it failed (" + "; ".join(failed) + ")",
            where="--report-to",
            fix="check the tracker's settings (docs/tracking.md); the run folder "
            "is complete and needs no rerun",
        )
    return done


def _tensorboard(results: dict, folder: Path, name: str) -> str:
    from torch.utils.tensorboard import SummaryWriter

    logdir = Path(os.environ.get("TENSORBOARD_LOGGING_DIR") or folder / "tensorboard")
    w = SummaryWriter(log_dir=str(logdir))
    try:
        for tag, v in scalars(results).items():
            w.add_scalar(tag, v, 0)
        w.add_text("metrics", _markdown(TABLE_COLUMNS, metric_rows(results)), 0)
        cfg = run_config(results, folder)
        w.add_text("config", _markdown(["setting", "value"], [[k, v] for k, v in cfg.items()]), 0)
    finally:
        w.close()
    return f"tensorboard: {logdir} (tensorboard --logdir {logdir})"


def _wandb(results: dict, folder: Path, name: str) -> str:
    import wandb

    run = wandb.init(
        project=os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT,
        name=name,
        job_type="evaluation",
        config=run_config(results, folder),
        reinit=True,
    )
    try:
        run.log({"metrics": wandb.Table(columns=TABLE_COLUMNS, data=metric_rows(results))})
        run.summary.update(scalars(results))
        url = getattr(run, "url", None)
        where = Path(run.dir).parent if getattr(run, "dir", None) else Path("wandb")
    finally:
        run.finish()
    return f"wandb: {url}" if url else f"wandb: offline run {where} (upload: wandb sync {where})"


_MLFLOW_KEY = re.compile(r"[^0-9A-Za-z_\-. /]")


def _mlflow(results: dict, folder: Path, name: str) -> str:
    import mlflow

    if os.environ.get("MLFLOW_EXPERIMENT_ID"):
        mlflow.set_experiment(experiment_id=os.environ["MLFLOW_EXPERIMENT_ID"])
    else:
        mlflow.set_experiment(os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_PROJECT)
    with mlflow.start_run(run_name=name) as run:
        mlflow.log_params(
            {
                _MLFLOW_KEY.sub("_", k): ("" if v is None else str(v))[:6000]
                for k, v in run_config(results, folder).items()
            }
        )
        mlflow.log_metrics({_MLFLOW_KEY.sub("_", k): v for k, v in scalars(results).items()})
        table = {c: [r[i] for r in metric_rows(results)] for i, c in enumerate(TABLE_COLUMNS)}
        try:
            mlflow.log_table(table, "negbench_metrics.json")
        except ImportError:  # log_table needs pandas
            mlflow.log_dict(table, "negbench_metrics.json")
        for f in ("results.json", "config.json"):
            if (folder / f).is_file():
                mlflow.log_artifact(str(folder / f))
        rid = run.info.run_id
    return f"mlflow: run {rid} in {mlflow.get_tracking_uri()}"


# -- a training --------------------------------------------------------------------------------------
def trainer_settings(
    targets: list[str], out: str | Path, run_name: str
) -> tuple[dict[str, Any], list]:
    """``TrainingArguments`` keys and extra callbacks that send a training to ``targets``
    (transformers' own callbacks), with negbench's defaults where the user set none: TensorBoard
    logs in ``OUT/logs`` (the Trainer's default lies in the checkpoints folder, which is deleted
    when the training finishes), W&B project and MLflow experiment ``negbench``."""
    if not targets:
        return {"report_to": "none"}, []
    callbacks = []
    report = list(targets)
    if "tensorboard" in targets and not os.environ.get("TENSORBOARD_LOGGING_DIR"):
        from torch.utils.tensorboard import SummaryWriter
        from transformers.integrations import TensorBoardCallback

        report.remove("tensorboard")  # its writer, in OUT/logs, given here instead
        callbacks.append(TensorBoardCallback(SummaryWriter(log_dir=str(Path(out) / "logs"))))
    if "wandb" in targets:
        os.environ.setdefault("WANDB_PROJECT", DEFAULT_PROJECT)
        callbacks.append(_wandb_finisher())
    if "mlflow" in targets and not os.environ.get("MLFLOW_EXPERIMENT_ID"):
        os.environ.setdefault("MLFLOW_EXPERIMENT_NAME", DEFAULT_PROJECT)
    return {"report_to": report or "none", "run_name": run_name}, callbacks


def _wandb_finisher():
    """A callback that ends the training's W&B run when the training ends (transformers leaves
    it open until the process exits): its history is then written, and the evaluation runs
    that follow are runs of their own."""
    from transformers import TrainerCallback

    class WandbFinish(TrainerCallback):
        def on_train_end(self, args, state, control, **kwargs):
            import wandb

            if wandb.run is not None:
                wandb.finish()

    return WandbFinish()
