"""Where a benchmark's data comes from: one resolver, one order, used by every benchmark.

The first of these that applies:

1. the benchmark's own variable (``$NEGBENCH_NUBENCH``, ``$NEGBENCH_CONDAQA`` …), as given: a
   folder, a file, or a Hugging Face id ``hf:owner/name``;
2. ``$NEGBENCH_DATA/<folder>`` when ``$NEGBENCH_DATA`` is set (a tree of releases);
3. ``../shared/data/<folder>`` next to the working directory, when it exists;
4. ``hf:<hub id>`` when the benchmark is published on the Hugging Face hub and the hub can be
   reached (no offline variable set, its endpoint answering within a few seconds:
   :func:`negbench.hub.unreachable`, the one probe of the process).

When none applies, the answer is the ``../shared/data`` path, so the loader's error names the
place it looked and the variables that point elsewhere — at once, also offline.  A task's
``source=`` option (or a loader's ``source`` argument) bypasses all of this.

:meth:`DataSource.status` says where a benchmark's data is found here, or every place it was
looked for (``negbench tasks``); :func:`load_hub_dataset` is the one way a benchmark reads a hub
data set (offline when the hub cannot be reached, one clear error naming the id).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from negbench import hub
from negbench.errors import DataError


def shared_data(sub: str) -> Path:
    """``$NEGBENCH_DATA/<sub>`` when that variable is set, else ``../shared/data/<sub>``
    relative to the current working directory (steps 2 and 3)."""
    env = os.environ.get("NEGBENCH_DATA")
    return Path(env) / sub if env else Path.cwd().parent / "shared" / "data" / sub


@dataclass(frozen=True)
class DataSource:
    """Where one benchmark's release is looked for."""

    name: str  # for messages: "Thunder-NUBench"
    env: str | None  # its own variable, e.g. NEGBENCH_NUBENCH
    folder: str | None  # its place under $NEGBENCH_DATA / ../shared/data
    hub: str | None = None  # its Hugging Face id, when it is published there
    env_folder_only: bool = False  # the variable counts only when it names a folder

    def local(self) -> Path | None:
        """Steps 2-3: the release's place in the data tree (None without a folder)."""
        return shared_data(self.folder) if self.folder else None

    def resolve(self) -> str:
        """The source in the documented order (see the module docstring)."""
        env = os.environ.get(self.env) if self.env else None
        if env and (not self.env_folder_only or Path(env).is_dir()):
            return env
        local = self.local()
        if local is not None and (os.environ.get("NEGBENCH_DATA") or local.exists()):
            return str(local)
        if self.hub and (local is None or hub.reachable()):
            return f"hf:{self.hub}"
        return str(local)

    def hint(self) -> str:
        """The places a user can point at the data, for error messages."""
        out = []
        if self.env:
            out.append(f"${self.env}")
        if self.folder:
            out.append(f"$NEGBENCH_DATA/{self.folder}")
        if self.hub:
            out.append(f"hf:{self.hub}")
        return ", ".join(out)

    def status(self) -> tuple[bool, str]:
        """(found, where): whether the data is here, and where it is — or, when it is not, every
        place it was looked for, in the order of :meth:`resolve`."""
        looked = []
        env = os.environ.get(self.env) if self.env else None
        if self.env:
            if env and (not self.env_folder_only or Path(env).is_dir()):
                if env.startswith("hf:"):
                    return self._hub_status(env[3:], f"${self.env}")
                if Path(env).exists():
                    return True, f"{env} (${self.env})"
                return False, f"${self.env} = {env}, which does not exist"
            looked.append(
                f"${self.env} (unset)" if not env else f"${self.env} = {env} (not a folder)"
            )
        local = self.local()
        if local is not None:
            tree = bool(os.environ.get("NEGBENCH_DATA"))
            how = f"$NEGBENCH_DATA/{self.folder}" if tree else "the local data folder"
            if local.exists():
                return True, f"{local} ({how})"
            looked.append(
                f"{how} {local} (missing)"
                if tree
                else f"$NEGBENCH_DATA (unset), {how} {local} (missing)"
            )
        if self.hub:
            found, where = self._hub_status(self.hub, "its hub id")
            if found:
                return found, where
            looked.append(where)
        return False, "looked in " + "; ".join(looked)

    def _hub_status(self, repo: str, how: str) -> tuple[bool, str]:
        why = hub.unreachable()
        if why is None:
            return True, f"hf:{repo} ({how}; the hub is reachable)"
        if hub.dataset_cached(repo):
            return True, f"hf:{repo} ({how}; in the local cache, the hub is not reachable)"
        return False, f"hf:{repo} (the hub is not reachable and the local cache lacks it)"


def load_hub_dataset(
    dataset_id: str,
    split: str,
    config: str | None = None,
    *,
    what: str = "the data set",
    local: str = "use a local folder of the release",
) -> Any:
    """One split of a Hugging Face hub data set (``datasets.load_dataset``) — the one way every
    benchmark reads the hub.  When the hub cannot be reached the process goes offline first, so
    a data set missing from the cache fails at once instead of after a minute of retries; every
    failure is one :class:`DataError` naming the id, the split and what to do (``local``: the
    alternative to offer)."""
    where = f"hf:{dataset_id}"
    try:
        import datasets
    except ImportError:
        raise DataError(
            f"loading {what} from the Hugging Face hub needs the 'datasets' package, "
            "which is not installed",
            path=where,
            fix=f"pip install -c constraints.txt datasets, or {local}",
        ) from None
    hub.offline_when_unreachable()  # unreachable: the cache only, no retries
    args = (dataset_id, config) if config else (dataset_id,)
    try:
        return datasets.load_dataset(*args, split=split)
    except Exception as exc:  # network, unknown id or configuration … — a data problem
        text = str(exc).splitlines()[0] if str(exc) else ""
        raise DataError(
            f"could not load {dataset_id}"
            + (f" ({config})" if config else "")
            + f" split {split} ({type(exc).__name__}: {text})",
            path=where,
            fix=hub.data_fix(local),
        ) from None


def hub_config_names(dataset_id: str) -> list[str]:
    """The configurations of a hub data set ([] when they cannot be listed)."""
    try:
        import datasets

        hub.offline_when_unreachable()
        return list(datasets.get_dataset_config_names(dataset_id))
    except Exception:
        return []
