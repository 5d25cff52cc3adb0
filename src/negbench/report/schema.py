"""The JSON schemas (JSON Schema draft 2020-12 subset) of ``results.json`` (``schema: 1``),
``report.json`` (``negbench.report/1``) and ``compare.json`` (``negbench.compare/1``), and a small
validator for the subset used (type, required, properties, additionalProperties, items, enum,
const, minimum) — no dependency.  Documented in ``docs/reports.md``.

Stability: within a schema version, keys are only ever added, never renamed or removed, and
their meaning does not change; anything else bumps the version.
"""

from __future__ import annotations

from typing import Any

REPORT_SCHEMA = "negbench.report/1"
COMPARE_SCHEMA = "negbench.compare/1"
RESULTS_SCHEMA_VERSION = 1

_num = {"type": ["number", "null"]}
_int = {"type": "integer"}
_str = {"type": "string"}
_strn = {"type": ["string", "null"]}
_metrics = {"type": "object"}  # name -> number | object (nested analyses)

RUN_SUMMARY = {
    "type": "object",
    "required": [
        "index",
        "label",
        "path",
        "model",
        "fingerprint",
        "adapter",
        "results_schema",
        "tasks",
        "units",
    ],
    "properties": {
        "index": _int,
        "label": _str,
        "path": _str,
        "model": _str,
        "fingerprint": _strn,
        "adapter": _strn,
        "negbench": _strn,
        "results_schema": _int,
        "started": _strn,
        "finished": _strn,
        "git": {"type": ["object", "null"]},
        "rescored": {"type": "boolean"},
        "tasks": {"type": "array", "items": _str},
        "units": {"type": "array", "items": _str},
    },
}

REF = {
    "type": "object",
    "required": ["run", "units", "stat", "field", "where", "hit", "scale", "replicate"],
    "properties": {
        "run": _int,
        "units": {"type": "array", "items": _str},
        "stat": {"enum": ["mean", "share", "count", "metric"]},
        "field": _strn,
        "where": {"type": "object"},
        "hit": {"type": ["object", "null"]},
        "scale": {"type": "number"},
        "replicate": {"enum": ["unit", "task"]},
    },
}

CELL = {
    "type": ["object", "null"],
    "required": ["value", "sd", "n", "values", "text", "ref"],
    "properties": {
        "value": {"type": ["number", "string", "null"]},
        "sd": _num,
        "n": _int,
        "values": {"type": "array", "items": _num},
        "text": _str,
        # a rate's items, 95 % interval (null: withheld or not a rate) and why it is withheld
        "items": {"type": ["integer", "null"]},
        "ci95": {"anyOf": [{"type": "null"}, {"type": "array", "items": _num}]},
        "ci_withheld": {"type": ["string", "null"]},
        "ref": {"anyOf": [{"type": "null"}, REF]},
    },
}

TABLE = {
    "type": "object",
    "required": [
        "id",
        "title",
        "benchmark",
        "paper",
        "caption",
        "notes",
        "row_header",
        "columns",
        "rows",
    ],
    "properties": {
        "id": _str,
        "title": _str,
        "benchmark": _str,
        "paper": _str,
        "caption": _str,
        "notes": {"type": "array", "items": _str},
        "row_header": {"type": "array", "items": _str},
        "columns": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "path"],
                "properties": {"key": _str, "path": {"type": "array", "items": _str}},
            },
        },
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["labels", "kind", "cells"],
                "properties": {
                    "labels": {"type": "array", "items": _str},
                    "kind": {"enum": ["run", "average", "paper", "baseline"]},
                    "cells": {"type": "array", "items": CELL},
                },
            },
        },
    },
}

MCNEMAR = {
    "type": ["object", "null"],
    "required": ["b", "c", "n_discordant", "exact_p", "chi2", "chi2_p"],
    "properties": {
        "b": _int,
        "c": _int,
        "n_discordant": _int,
        "exact_p": {"type": "number"},
        "chi2": {"type": "number"},
        "chi2_p": {"type": "number"},
    },
}
BOOTSTRAP = {
    "type": "object",
    "required": ["delta", "ci_low", "ci_high", "p", "n_resamples", "seed", "alpha"],
    "properties": {
        "delta": _num,
        "ci_low": _num,
        "ci_high": _num,
        "p": _num,
        "n_resamples": _int,
        "seed": _int,
        "alpha": {"type": "number"},
        "n_clusters": _int,
    },
}
CMP_ROW = {
    "type": "object",
    "required": [
        "id",
        "task",
        "benchmark",
        "mode",
        "shots",
        "metric",
        "units",
        "n_pairs",
        "n_docs",
        "a_mean",
        "b_mean",
        "delta",
        "gains",
        "losses",
        "mcnemar",
        "bootstrap",
        "significant",
    ],
    "properties": {
        "id": _str,
        "task": _str,
        "benchmark": _str,
        "mode": _str,
        "shots": _int,
        "metric": _strn,
        "units": {"type": "array", "items": _str},
        "n_pairs": _int,
        "n_docs": _int,
        "a_mean": {"type": "number"},
        "b_mean": {"type": "number"},
        "delta": {"type": "number"},
        "both_correct": {"type": ["integer", "null"]},
        "both_wrong": {"type": ["integer", "null"]},
        "gains": _int,
        "losses": _int,
        "mcnemar": MCNEMAR,
        "bootstrap": BOOTSTRAP,
        "significant": {"type": "boolean"},
        "group": _str,
    },
}
FLIP = {
    "type": "object",
    "required": [
        "group",
        "unit",
        "doc_id",
        "change",
        "a_score",
        "b_score",
        "a_pred",
        "b_pred",
        "gold",
    ],
    "properties": {
        "group": _str,
        "unit": _str,
        "doc_id": _str,
        "change": {"enum": ["gain", "loss"]},
        "a_score": {"type": "number"},
        "b_score": {"type": "number"},
        "a_pred": _strn,
        "b_pred": _strn,
        "gold": _strn,
        "a_error_type": _strn,
        "b_error_type": _strn,
    },
}

COMPARE = {
    "type": "object",
    "required": ["schema", "a", "b", "settings", "groups", "units", "flips", "skipped", "warnings"],
    "properties": {
        "schema": {"const": COMPARE_SCHEMA},
        "a": RUN_SUMMARY,
        "b": RUN_SUMMARY,
        "settings": {
            "type": "object",
            "required": ["bootstrap_resamples", "seed", "alpha", "pairing"],
        },
        "groups": {"type": "array", "items": CMP_ROW},
        "units": {"type": "array", "items": CMP_ROW},
        "flips": {"type": "array", "items": FLIP},
        "skipped": {"type": "array", "items": {"type": "object", "required": ["unit", "reason"]}},
        "warnings": {"type": "array", "items": _str},
    },
}

REPORT = {
    "type": "object",
    "required": [
        "schema",
        "negbench",
        "generated",
        "runs",
        "tables",
        "plots",
        "comparisons",
        "warnings",
        "files",
    ],
    "properties": {
        "schema": {"const": REPORT_SCHEMA},
        "negbench": _str,
        "generated": _str,
        "runs": {"type": "array", "items": RUN_SUMMARY},
        "tables": {"type": "array", "items": TABLE},
        "plots": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "title", "kind", "files"],
                "properties": {
                    "id": _str,
                    "title": _str,
                    "kind": {
                        "enum": [
                            "accuracy_vs_shots",
                            "incorrect_choice",
                            "confusion",
                            "accchg",
                            "calibration",
                        ]
                    },
                    "caption": _str,
                    "files": {"type": "array", "items": _str},
                },
            },
        },
        "comparisons": {"type": "array", "items": COMPARE},
        "warnings": {"type": "array", "items": _str},
        "headline": {"anyOf": [{"type": "null"}, TABLE]},
        "run_warnings": {
            "type": "array",
            "items": {"type": "object", "required": ["run", "unit", "kind", "message", "fix"]},
        },
        "notes": {"type": "array", "items": _str},
        "files": {"type": "object"},
    },
}

_ci = {"type": ["array", "null"], "items": {"type": "number"}}
#: units[u]["subset"] / groups[g]["subset"]: how the records were chosen (--limit, --sample)
SUBSET = {
    "type": "object",
    "required": ["how", "n", "full", "subset", "seed", "rule"],
    "properties": {
        "how": {"enum": ["all", "limit", "sample"]},
        "n": _int,
        "full": _int,
        "subset": {"type": "boolean"},
        "seed": {"type": ["integer", "null"]},
        "rule": _str,
        "asked": {"type": ["integer", "null"]},
        "units": _int,
        "units_full": _int,
        "missing_strata": {"type": "array", "items": _str},
    },
}
UNIT_HEADLINE = {
    "type": "object",
    "required": ["metric", "value", "ci95", "n"],
    "properties": {"metric": _str, "value": _num, "ci95": _ci, "n": _int},
}
GROUP_HEADLINE = {
    "type": "object",
    "required": ["metric", "mean", "sd", "ci95", "n", "seeds"],
    "properties": {"metric": _str, "mean": _num, "sd": _num, "ci95": _ci, "n": _int, "seeds": _int},
}
WARNING = {
    "type": "object",
    "required": ["unit", "kind", "message", "fix"],
    "properties": {"unit": _strn, "kind": _str, "message": _str, "fix": _str},
}
UNIT = {
    "type": "object",
    "required": ["task", "mode", "shots", "seed", "group", "metrics"],
    "properties": {
        "task": _str,
        "mode": _str,
        "shots": _int,
        "seed": {"type": ["integer", "null"]},
        "group": _str,
        "metrics": _metrics,
        "headline": UNIT_HEADLINE,
        "subset": SUBSET,
    },
}
GROUP = {
    "type": "object",
    "required": ["task", "mode", "shots", "units", "metrics"],
    "properties": {
        "task": _str,
        "mode": _str,
        "shots": _int,
        "units": {"type": "array", "items": _str},
        "metrics": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["mean", "sd", "n_seeds", "values"],
                "properties": {
                    "mean": _num,
                    "sd": _num,
                    "n_seeds": _int,
                    "values": {"type": "array", "items": _num},
                },
            },
        },
        "headline": GROUP_HEADLINE,
        "subset": SUBSET,
    },
}
RESULTS = {
    "type": "object",
    "required": [
        "schema",
        "negbench",
        "started",
        "finished",
        "config",
        "model",
        "provenance",
        "datasets",
        "units",
        "groups",
        "engine",
        "wall_s",
        "tables",
    ],
    "properties": {
        "schema": {"const": RESULTS_SCHEMA_VERSION},
        "negbench": _str,
        "started": _str,
        "finished": _str,
        "config": {"type": "object", "required": ["model", "tasks"]},
        "model": {"type": "object", "required": ["spec", "fingerprint"]},
        "provenance": {"type": "object", "required": ["packages", "git"]},
        "datasets": {"type": "object"},
        "units": {"type": "object", "additionalProperties": UNIT},
        "groups": {"type": "object", "additionalProperties": GROUP},
        "engine": {"type": "object"},
        "wall_s": {"type": "number"},
        "tables": {"type": "object", "additionalProperties": _str},
        "rescored": {"type": "object"},
        "cluster": {"type": ["object", "null"]},  # Ray runs: workers, groups, retried groups
        # objects since subsets and headlines; plain strings in runs saved before
        "warnings": {"type": "array", "items": {"anyOf": [_str, WARNING]}},
    },
}

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is(v: Any, t: str) -> bool:
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, _TYPES[t])


def validate(v: Any, schema: dict, path: str = "$") -> list[str]:
    """Errors of ``v`` against ``schema`` (empty list: valid)."""
    errs: list[str] = []
    if "anyOf" in schema:
        if not any(not validate(v, s, path) for s in schema["anyOf"]):
            errs.append(f"{path}: matches none of anyOf")
        return errs
    if "const" in schema and v != schema["const"]:
        return [f"{path}: expected {schema['const']!r}, got {v!r}"]
    if "enum" in schema and v not in schema["enum"]:
        return [f"{path}: {v!r} not one of {schema['enum']}"]
    t = schema.get("type")
    if t is not None:
        ts = t if isinstance(t, list) else [t]
        if not any(_is(v, x) for x in ts):
            return [f"{path}: expected {t}, got {type(v).__name__}"]
    if isinstance(v, dict):
        for k in schema.get("required", []):
            if k not in v:
                errs.append(f"{path}: missing '{k}'")
        props = schema.get("properties", {})
        for k, sub in props.items():
            if k in v:
                errs += validate(v[k], sub, f"{path}.{k}")
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for k, x in v.items():
                if k not in props:
                    errs += validate(x, extra, f"{path}.{k}")
    if isinstance(v, list) and "items" in schema:
        for i, x in enumerate(v):
            errs += validate(x, schema["items"], f"{path}[{i}]")
    return errs
