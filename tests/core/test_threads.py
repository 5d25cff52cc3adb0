"""The engine's CPU threads follow the cores other processes leave free."""

from __future__ import annotations

from negbench.core.threads import ThreadGovernor, choose_threads, others_running, thread_governor


def test_threads_are_the_free_cores_at_least_one():
    assert choose_threads(2, 0.0) == 2
    assert choose_threads(2, 0.2) == 2  # a little background work: keep both
    assert choose_threads(2, 1.0) == 1  # one busy neighbour: one thread, not two half-cores
    assert choose_threads(2, 0.6) == 1
    assert choose_threads(2, 5.0) == 1
    assert choose_threads(16, 3.0) == 13


def test_governor_looks_again_after_its_interval():
    now = [0.0]
    load = [0.0]
    threads = [8]
    g = ThreadGovernor(
        threads.append,
        lambda: threads[-1],
        interval=2.0,
        cores=lambda: 4,
        others=lambda: load[0],
        clock=lambda: now[0],
    )
    g.tick()
    assert threads[-1] == 4  # quiet: all four cores
    load[0] = 2.0
    now[0] = 1.0
    g.tick()
    assert threads[-1] == 4  # not looked at yet
    now[0] = 2.5
    g.tick()  # smoothed: (0 + 2) / 2 = 1 busy core
    assert threads[-1] == 3
    now[0] = 5.0
    g.tick()  # (1 + 2) / 2 = 1.5
    assert threads[-1] == 2
    assert g.history == [4, 3, 2]


def test_others_running_does_not_count_this_process():
    assert others_running() >= 0.0


def test_fixed_threads_or_no_torch_mean_no_governor(monkeypatch):
    class Cpu:
        device = "cpu"

    assert not isinstance(thread_governor(Cpu(), None), ThreadGovernor)
    import torch  # noqa: F401  (loaded: the governor may use it)

    assert isinstance(thread_governor(Cpu(), "auto"), ThreadGovernor)

    class Gpu:
        device = "cuda:0"

    assert not isinstance(thread_governor(Gpu(), "auto"), ThreadGovernor)
