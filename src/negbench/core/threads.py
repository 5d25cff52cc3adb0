"""CPU threads chosen from the cores actually free, and chosen again during a long run.

torch starts as many threads as the process may use cores.  Beside other work that is the
worst choice: a forward call ends at a barrier where every thread waits for the slowest, and a
thread that shares its core with another process is slow — on a 2-core machine beside one busy
process the engine took 2.40 s with 2 threads and 1.00 s with 1 (0.69 s quiet).  The
:class:`ThreadGovernor` counts the runnable tasks of *other* processes (``/proc/loadavg``'s
running count, minus this process's running threads, sampled a few times, scaled to the share
of the machine's cores this process may use; elsewhere the 1-minute load average minus this
process's own CPU use) and gives torch the cores left, at least one.  The engine calls :meth:`ThreadGovernor.tick` before each forward call; it looks
again every ``interval`` seconds, so a neighbour that starts or stops mid-run is noticed.
``--threads N`` fixes the count instead.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

#: A thread is given only when at least this much of a core is free beyond the others' load:
#: a thread that shares its core costs the whole call far more than one thread fewer does.
SPARE = 0.7


def allowed_cores() -> int:
    """Cores this process may run on (its affinity), or all of them."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _own_running() -> int:
    """This process's threads that are running or runnable now (state R)."""
    n = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0
    for t in tasks:
        try:
            with open(f"/proc/self/task/{t}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"R":
            n += 1
    return n


def _running_total() -> int | None:
    """Runnable tasks on the machine now (``/proc/loadavg``'s 4th field, before the slash)."""
    try:
        with open("/proc/loadavg", "rb") as f:
            return int(f.read().split()[3].split(b"/")[0])
    except (OSError, IndexError, ValueError):
        return None


@dataclass
class _OwnCpu:
    """This process's CPU use per second of wall time since the last look (for the load
    average fallback)."""

    last: tuple[float, float] = field(default_factory=lambda: (time.monotonic(), _cpu()))

    def rate(self) -> float:
        now = (time.monotonic(), _cpu())
        wall = now[0] - self.last[0]
        r = (now[1] - self.last[1]) / wall if wall > 0 else 0.0
        self.last = now
        return r


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def others_running(samples: int = 5, own: _OwnCpu | None = None) -> float:
    """Cores' worth of work other processes are doing now: the mean over ``samples`` looks of
    the machine's runnable tasks minus this process's; without ``/proc``, the 1-minute load
    average minus this process's CPU use."""
    seen = []
    for i in range(samples):
        total = _running_total()
        if total is None:
            break
        seen.append(max(0, total - _own_running()))
        if i + 1 < samples:
            time.sleep(0.0005)
    if seen:
        # /proc/loadavg counts the whole machine; with an affinity to some of its cores (a
        # container's cpuset) only the share of the others' work on those cores competes
        return sum(seen) / len(seen) * min(1.0, allowed_cores() / max(1, os.cpu_count() or 1))
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0
    return max(0.0, load - (own.rate() if own else 0.0))


def choose_threads(cores: int, others: float) -> int:
    """Threads for ``cores`` usable cores beside ``others`` cores' worth of other work."""
    return max(1, min(cores, math.floor(cores - others + (1 - SPARE))))


class ThreadGovernor:
    """Sets torch's threads from the free cores, now and every ``interval`` seconds after."""

    def __init__(
        self,
        set_threads: Callable[[int], None],
        get_threads: Callable[[], int],
        *,
        interval: float = 2.0,
        cores: Callable[[], int] = allowed_cores,
        others: Callable[[], float] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.set_threads, self.get_threads = set_threads, get_threads
        self.interval = interval
        self.cores = cores
        self._own = _OwnCpu()
        self.others = others or (lambda: others_running(own=self._own))
        self.clock = clock
        self._next = -math.inf
        self._load: float | None = None
        self.history: list[int] = []  # the thread counts chosen, in order

    def tick(self) -> None:
        """Look again when ``interval`` has passed (a clock read otherwise)."""
        now = self.clock()
        if now < self._next:
            return
        self._next = now + self.interval
        self.update()

    def update(self) -> int:
        load = self.others()
        # smoothed a little: one look at a busy moment should not halve the threads
        self._load = load if self._load is None else 0.5 * (self._load + load)
        n = choose_threads(self.cores(), self._load)
        if n != self.get_threads():
            self.set_threads(n)
        if not self.history or self.history[-1] != n:
            self.history.append(n)
        return n


class _Fixed:
    """No adjustment (a GPU, an API backend, ``--threads N``, or torch not loaded)."""

    history: list[int] = []

    def tick(self) -> None:
        pass


def thread_governor(backend, threads: "int | str | None"):
    """What adjusts the threads of ``backend``'s forward calls: ``"auto"`` on a CPU backend
    of torch gives a :class:`ThreadGovernor`; a number sets torch's threads once; None leaves
    them as they are."""
    torch = sys.modules.get("torch")
    cpu = str(getattr(backend, "device", "")) == "cpu"
    if threads is None or torch is None or not cpu or getattr(backend, "level", "") == "request":
        return _Fixed()
    if isinstance(threads, int):
        torch.set_num_threads(threads)
        return _Fixed()
    return ThreadGovernor(torch.set_num_threads, torch.get_num_threads)
