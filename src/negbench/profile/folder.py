"""A profile folder on disk, and a profile read back as one report :class:`~negbench.scoring.runs.Run`.

::

    PROFILE/
      profile.json      what was run (the manifest: model, preset, every benchmark's parts and
                        their status, what is missing and how to get it) + the computed page
      profile.html      the page (report/html.py's page: tables, plots, per-sample browser)
      profile.md        the same tables in Markdown
      model_card.md     a snippet for a model card
      lm-eval/<model>/results_<date>.json   the scores in lm-evaluation-harness's layout
      plots/            the page's figures (SVG, PNG)
      runs/<part>/      one ordinary run folder per part (negbench run's)

The manifest is rewritten after every part, so a killed profile knows what had finished: a rerun
skips those parts (their run folders are complete) and resumes the unfinished one from its
staging folder and the response cache.  Everything else in the folder is derived from the
manifest and the run folders (``negbench report PROFILE`` writes it again).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from negbench.errors import DataError, OutputError
from negbench.scoring.runs import Run, UnitResult, load_run, short_name

SCHEMA = "negbench.profile/1"
MANIFEST = "profile.json"
RUNS = "runs"


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def is_profile(folder: str | Path) -> bool:
    """Whether ``folder`` holds a profile (its manifest)."""
    return (Path(folder) / MANIFEST).is_file()


def read_manifest(folder: str | Path) -> dict:
    """``profile.json`` of a profile folder; a clear error when it is missing or damaged."""
    p = Path(folder) / MANIFEST
    if not p.is_file():
        raise OutputError(
            f"not a negbench profile folder (no {MANIFEST}): {folder}",
            where=str(p),
            fix="give a folder that 'negbench profile' wrote (its --out)",
        )
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(
            f"{MANIFEST} cannot be read ({exc})",
            path=str(p),
            fix="rerun the same 'negbench profile' command (finished parts are kept)",
        ) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise DataError(
            f"unknown profile schema {data.get('schema') if isinstance(data, dict) else None!r} "
            f"(this negbench reads {SCHEMA})",
            path=str(p),
            field="schema",
        )
    return data


def check_target(folder: Path, identity: Mapping[str, Any], overwrite: bool) -> dict | None:
    """Check a profile's output folder before anything loads: a new or empty folder, or a
    profile of the same identity (returned, to resume); a profile of another identity, or a
    folder holding something else, only with ``overwrite``."""
    from negbench.files import check_writable_folder

    if folder.exists() and not folder.is_dir():
        raise OutputError(
            f"{folder} is a file, not a folder", where="--out", fix="choose another --out"
        )
    if folder.is_dir() and any(folder.iterdir()):
        if is_profile(folder):
            old = read_manifest(folder)
            if old.get("identity") == dict(identity):
                return old
            if not overwrite:
                diff = sorted(
                    k
                    for k in set(old.get("identity") or {}) | set(identity)
                    if (old.get("identity") or {}).get(k) != identity.get(k)
                )
                raise OutputError(
                    f"{folder} holds a profile of a different configuration "
                    f"(differs in: {', '.join(diff)})",
                    where="--out",
                    fix="choose another --out, or pass --overwrite to replace it",
                )
        elif not overwrite:
            raise OutputError(
                f"{folder} is not empty and holds no negbench profile",
                where="--out",
                fix="choose another --out, or pass --overwrite",
            )
        return None
    check_writable_folder(folder, "--out")
    return None


def write_manifest(folder: Path, manifest: Mapping[str, Any]) -> None:
    from negbench.files import write_json

    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / MANIFEST, manifest)


# -- a profile as one run ------------------------------------------------------------------------
@dataclass
class ProfileRun(Run):
    """Every run folder of a profile read as one :class:`Run` (unit names are unique across a
    profile's parts), so the report's tables, cell references, per-sample browser and
    comparisons work on a profile as on a run."""

    unit_folder: dict[str, Path] = field(default_factory=dict, repr=False)

    def samples_path(self, unit: str) -> Path:
        return self.unit_folder[unit] / "samples" / f"{unit}.jsonl"


def merged_results(parts: Iterable[Mapping[str, Any]]) -> dict:
    """One ``results.json``-shaped dict of several runs of one model: units, groups, datasets,
    tables and warnings together; the model, provenance and times of the first (the times span
    all).  The lm-eval layout and the model-card snippet read a profile through it."""
    parts = list(parts)
    if not parts:
        raise DataError("the profile has no finished run", path=MANIFEST)
    first = parts[0]
    out: dict[str, Any] = {
        k: first.get(k) for k in ("schema", "negbench", "config", "model", "provenance")
    }
    out["started"] = min(str(p.get("started") or "") for p in parts) or None
    out["finished"] = max(str(p.get("finished") or "") for p in parts) or None
    out["wall_s"] = sum(float(p.get("wall_s") or 0.0) for p in parts)
    for key in ("units", "groups", "datasets", "tables"):
        merged: dict[str, Any] = {}
        for p in parts:
            merged.update(p.get(key) or {})
        out[key] = merged
    out["warnings"] = [w for p in parts for w in (p.get("warnings") or [])]
    cfg = dict(out.get("config") or {})
    cfg["tasks"] = [t for p in parts for t in ((p.get("config") or {}).get("tasks") or [])]
    out["config"] = cfg
    return out


def load_profile_run(folder: str | Path, label: str | None = None, index: int = 0) -> ProfileRun:
    """A profile folder's finished runs as one :class:`ProfileRun`."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    runs = [
        load_run(folder / p["run"], index=index)
        for p in finished_parts(manifest)
        if (folder / p["run"] / "results.json").is_file()
    ]
    if not runs:
        raise DataError(
            "the profile has no finished benchmark run",
            path=str(folder / MANIFEST),
            fix="run 'negbench profile' (with the same options) to finish it",
        )
    results = merged_results([r.results for r in runs])
    units: dict[str, UnitResult] = {}
    where: dict[str, Path] = {}
    for r in runs:
        for name, u in r.units.items():
            units[name] = u
            where[name] = r.path
    model = manifest.get("model") or "?"
    adapter = manifest.get("adapter")
    lab = label or (f"{short_name(model)}+{short_name(adapter)}" if adapter else short_name(model))
    return ProfileRun(folder, results, lab, units, index, unit_folder=where)


def finished_parts(manifest: Mapping[str, Any]) -> list[dict]:
    """The parts of a manifest whose run finished, in the profile's order."""
    return [
        p
        for b in manifest.get("benchmarks", [])
        for p in b.get("parts", [])
        if p.get("status") == "done"
    ]


def finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
