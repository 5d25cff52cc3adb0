"""The options several commands share are declared once (negbench/options.py) and reach the
session typed: every command adds them with ``Bundle.add_to`` and reads them with
``from_args``; the Python API's keywords become the same bundles."""

from __future__ import annotations

import re

import pytest

from locations import ROOT
from negbench.cli import build_parser
from negbench.options import (
    ApiOptions,
    ClusterOptions,
    EngineOptions,
    ModelOptions,
    SessionOptions,
)


def test_a_command_line_becomes_the_bundles():
    args = build_parser().parse_args(
        "run --dtype float32 --threads 2 --quantize none --add-bos no --no-cache "
        "--batch-size 8 --no-prefix-sharing --group-tokens 64 --concurrency 2 "
        "--vllm-arg=--max-model-len=64 --ray local:2".split()
    )
    o = SessionOptions.from_args(args)
    assert o.model == ModelOptions(dtype="float32", threads=2, add_bos="no")
    assert o.engine == EngineOptions(cache=None, batch_size=8, share_prefix=False, group_tokens=64)
    assert o.api == ApiOptions(concurrency=2, vllm_args=("--max-model-len=64",))
    assert o.cluster == ClusterOptions(ray="local:2")
    defaults = SessionOptions.from_args(build_parser().parse_args(["run"]))
    assert defaults == SessionOptions()  # the flags' defaults are the bundles' defaults


def test_a_command_without_a_flag_keeps_the_default():
    args = build_parser().parse_args("profile --threads 3 --cache c.sqlite".split())
    o = SessionOptions.from_args(args)
    assert o.model == ModelOptions(threads=3) and o.engine == EngineOptions(cache="c.sqlite")
    assert o.cluster == ClusterOptions()  # profile has no --ray: the default


def test_keywords_become_the_same_bundles_and_a_typo_is_named():
    o = SessionOptions.of(dtype="float32", batch_size=4, cache=None, concurrency=1, vllm_args=["x"])
    assert o.model.dtype == "float32" and o.engine == EngineOptions(cache=None, batch_size=4)
    assert o.api == ApiOptions(concurrency=1, vllm_args=("x",))
    with pytest.raises(TypeError, match="unknown session option 'dtpye'.*'dtype'"):
        SessionOptions.of(dtpye="float32")


def test_no_command_declares_a_shared_option_itself():
    shared = {
        f
        for b in (ModelOptions, ApiOptions, EngineOptions, ClusterOptions)
        for fl in b.FLAGS.values()
        for f in fl.flags
    }
    bad = []
    for path in sorted((ROOT / "src" / "negbench" / "cli").glob("*.py")):
        for flag in re.findall(r"add_argument\(\s*\"(--[a-z-]+)\"", path.read_text()):
            if flag in shared and not (path.name == "experiment.py" and flag.startswith("--ray")):
                bad.append(f"{path.name}: {flag}")
    # experiment's --ray options mean jobs of a grid, not model replicas: its own help
    assert bad == []
