"""One data-source resolver for every benchmark, in one documented order: the benchmark's
variable, $NEGBENCH_DATA/<folder>, ../shared/data/<folder>, the hub (when reachable)."""

from __future__ import annotations

import pytest

from negbench.tasks import data_source
from negbench.tasks.data_source import DataSource

SRC = DataSource("Demo", "NEGBENCH_DEMO", "demo", "owner/demo")


@pytest.fixture
def clean(monkeypatch, tmp_path):
    for var in ("NEGBENCH_DEMO", "NEGBENCH_DATA", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    work = tmp_path / "project"
    work.mkdir()
    monkeypatch.chdir(work)  # ../shared/data is tmp_path/shared/data
    return tmp_path


def test_the_order(clean, monkeypatch):
    shared = clean / "shared" / "data" / "demo"
    monkeypatch.setattr(data_source.hub, "reachable", lambda: True)
    assert SRC.resolve() == "hf:owner/demo"  # 4. nothing local
    shared.mkdir(parents=True)
    assert SRC.resolve() == str(shared)  # 3. ../shared/data
    monkeypatch.setenv("NEGBENCH_DATA", str(clean / "tree"))
    assert SRC.resolve() == str(clean / "tree" / "demo")  # 2. as given, even missing
    monkeypatch.setenv("NEGBENCH_DEMO", "hf:someone/else")
    assert SRC.resolve() == "hf:someone/else"  # 1. the benchmark's own


def test_offline_falls_back_to_the_local_path(clean, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert SRC.resolve() == str(
        clean / "shared" / "data" / "demo"
    )  # the loader says what is missing


def test_folder_only_variables_and_hub_only_sources(clean, monkeypatch, tmp_path):
    diag = DataSource("Demo diagnostics", "NEGBENCH_DEMO", "demo", env_folder_only=True)
    monkeypatch.setenv("NEGBENCH_DEMO", "hf:owner/demo")
    assert diag.resolve() == str(clean / "shared" / "data" / "demo")  # a hub id does not count
    monkeypatch.setenv("NEGBENCH_DEMO", str(tmp_path))
    assert diag.resolve() == str(tmp_path)
    hub_only = DataSource("Hub", "NEGBENCH_HUBONLY", None, "owner/hub")
    assert hub_only.resolve() == "hf:owner/hub"
    assert SRC.hint() == "$NEGBENCH_DEMO, $NEGBENCH_DATA/demo, hf:owner/demo"


def test_every_benchmark_uses_it():
    import negbench.tasks.condaqa.tasks as cq
    import negbench.tasks.jnli_neg.tasks as jn
    import negbench.tasks.jsts_neg.tasks as js
    import negbench.tasks.konubench.tasks as kb
    import negbench.tasks.notadataset.tasks as nad
    import negbench.tasks.nubench.tasks as nb
    import negbench.tasks.scone.tasks as sc

    for mod, env in (
        (cq, "NEGBENCH_CONDAQA"),
        (jn, "NEGBENCH_JNLI_NEG"),
        (js, "NEGBENCH_JSTS_NEG"),
        (kb, "NEGBENCH_KONUBENCH"),
        (nad, "NEGBENCH_NOTADATASET"),
        (nb, "NEGBENCH_NUBENCH"),
        (sc, "NEGBENCH_SCONE"),
    ):
        assert isinstance(mod.DATA, DataSource) and mod.DATA.env == env
