"""The registry that benchmark folders declare into: typed kinds, and a name registered twice is
refused with a message that names both sides."""

from __future__ import annotations

import pytest

from negbench.errors import TaskError
from negbench.scoring.registry import KINDS, Contributions, Registry


def test_a_name_registered_twice_is_refused():
    r = Registry()
    r._scanned = True  # no scan of the real folders: this registry is the test's own
    Contributions(r, "bench-a").add("recipe", "lora", {"lr": 1})
    Contributions(r, "bench-a").add("recipe", "lora", {"lr": 1})  # the same value again: fine
    with pytest.raises(TaskError) as e:
        Contributions(r, "bench-b").add("recipe", "lora", {"lr": 2})
    assert "registered twice (by bench-a and by bench-b)" in e.value.what
    assert r.get("recipe", "lora") == {"lr": 1}


def test_an_unknown_kind_is_refused():
    r = Registry()
    with pytest.raises(ValueError, match="unknown registry kind"):
        r.add("recipes", "x", 1)


def test_the_shipped_folders_register_no_name_twice_and_every_kind_is_described():
    from negbench.scoring.registry import REGISTRY

    for kind in KINDS:
        assert KINDS[kind]
        REGISTRY.names(kind)  # every provider of every kind loads without a clash
    assert {"profile", "phenomena", "reported", "training_data"} <= set(KINDS)
