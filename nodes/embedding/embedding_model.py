"""Where the embedding model's weights come from, and who may use the model when.

`model_key` resolves the `embedding_model` setting — a folder `make models` assembled, any
sentence-transformers folder, or a hub id (with internet access) — and fails with a message that
says what to run or set; `load_model` loads the PyTorch model offline when it is local, without
the libraries' progress bars. `PriorityLock` lets a user's query go before waiting indexing work.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from grove.core.settings import Settings
from nodes.embedding.embedding_runtime import resolve_device

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

# "org/name" with nothing path-like about it: the only names worth trying on a hub.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


class EmbeddingModelError(RuntimeError):
    """The embedding model could not be loaded."""


class EmbeddingModelMissing(EmbeddingModelError, FileNotFoundError):
    """The configured embedding model is neither a local folder nor a loadable hub id."""


@dataclass(frozen=True, slots=True)
class ModelKey:
    """What a loaded model depends on; a different key means a different model object."""

    source: str  # a local folder or a hub id
    local: bool
    dtype: str
    max_tokens: int
    runtime: str = "torch"
    device: str = "auto"


def missing_message(name: str, settings: Settings, detail: str = "") -> str:
    bundled = settings.models_dir / name
    where = (
        f"there is no folder {Path(name).expanduser()}"
        if bundled == Path(name)  # an absolute path
        else f"there is no folder {bundled} and no local path {name!r}"
    )
    return (
        f"embedding model {name!r} not found{detail}: {where}. "
        f"Run `make models` to assemble the bundled models into "
        f"{settings.models_dir}, or point the setting `embedding_model` (env GROVE_EMBEDDING_MODEL) "
        "at a sentence-transformers folder (or, with internet access, a hub id like 'org/name')."
    )


def model_key(settings: Settings) -> ModelKey:
    """Resolve the model setting, failing clearly when there is nothing to load."""
    name = settings.embedding_model
    source = settings.model_path(name)
    path = Path(source)
    if path.is_dir():
        if not (path / "config.json").exists() and not (path / "modules.json").exists():
            raise EmbeddingModelMissing(
                f"embedding model folder {path} is incomplete (no config.json / modules.json). "
                "Run `make models` again, or fix the setting `embedding_model` "
                "(env GROVE_EMBEDDING_MODEL)."
            )
        local = True
    elif path.exists():
        raise EmbeddingModelMissing(
            f"embedding model {name!r} resolves to {path}, which is a file, not a "
            "sentence-transformers folder. Fix the setting `embedding_model` "
            "(env GROVE_EMBEDDING_MODEL) or run `make models`."
        )
    elif _HUB_ID.fullmatch(name) and os.environ.get("HF_HUB_OFFLINE", "0") not in {"1", "true", "True"}:
        local = False  # a hub id: loads only with internet access
    else:
        raise EmbeddingModelMissing(missing_message(name, settings))
    return ModelKey(
        source=source,
        local=local,
        dtype=settings.embedding_dtype,
        max_tokens=settings.embedding_max_tokens,
        runtime=settings.embedding_runtime,
        device=settings.embedding_device,
    )


def load_model(key: ModelKey, settings: Settings) -> SentenceTransformer:
    if key.local:
        # Before sentence-transformers / huggingface_hub are imported, so it takes effect.
        os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    # «Loading weights» bars are library noise, not the user's (transformers leaves the function unannotated)
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    torch.set_num_threads(max(1, settings.cpu_threads))
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[key.dtype]
    try:
        model = SentenceTransformer(
            key.source,
            device=resolve_device(key.device, "torch"),
            local_files_only=key.local,
            model_kwargs={"dtype": dtype},
        )
    except Exception as exc:  # a hub id without internet, a broken folder, ...
        if key.local:
            raise EmbeddingModelError(
                f"could not load the embedding model from {key.source}: {exc}. Run `make models` "
                "to re-assemble it, or fix the setting `embedding_model` (env GROVE_EMBEDDING_MODEL)."
            ) from exc
        raise EmbeddingModelMissing(
            missing_message(settings.embedding_model, settings, f" (loading it from the hub failed: {exc})")
        ) from exc
    model.eval()
    if model.max_seq_length is None or model.max_seq_length > key.max_tokens:
        model.max_seq_length = key.max_tokens
    return model


def hub_snapshot(name: str) -> str:
    """A hub model's local folder (downloaded with internet access), for the ONNX export."""
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(name)
    except Exception as exc:
        raise EmbeddingModelMissing(f"embedding model {name!r} could not be downloaded: {exc}") from exc


class PriorityLock:
    """The model's lock, where urgent holders (a user's query) go before waiting background ones.

    Indexing holds it for one batch or one late-chunking window at a time, never a whole
    document, and yields to any query waiting for it; a query waits at most for the batch
    in progress. Re-entrant for its holder. Used as a context manager it is an urgent hold.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._owner: int | None = None
        self._depth = 0
        self._urgent_waiting = 0

    @contextmanager
    def hold(self, urgent: bool = True) -> Iterator[None]:
        me = threading.get_ident()
        with self._cond:
            if self._owner == me:
                self._depth += 1
            else:
                if urgent:
                    self._urgent_waiting += 1
                try:
                    self._cond.wait_for(lambda: self._owner is None and (urgent or not self._urgent_waiting))
                finally:
                    if urgent:
                        self._urgent_waiting -= 1
                self._owner, self._depth = me, 1
        try:
            yield
        finally:
            with self._cond:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
                    self._cond.notify_all()

    def __enter__(self) -> None:
        self._held = self.hold(urgent=True)
        self._held.__enter__()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._held.__exit__(exc_type, exc, traceback)
