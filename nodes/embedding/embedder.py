"""Embedding node: the sentence-transformers model (EmbeddingGemma by default), loaded once per process.

:func:`get_embedder` returns a process-wide :class:`Embedder`, loaded lazily and shared by every thread,
keyed by the model settings, so a changed setting (after ``reset_settings()``) loads the new model once.
Sentence vectors come from the configured runtime (`nodes.embedding.embedding_runtime`); token embeddings
per window (late chunking, late interaction) from the PyTorch model, loaded on first need. The other knobs
are read from the settings at call time. The Prefect tasks at the bottom (``embed-chunks``,
``embed-query``, ``embed-documents``) wrap the heavy calls and return plain lists so their results serialise.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

import numpy as np
from grove.core.observe import task

from chunking import Chunk, late_chunk_embeddings
from grove.core.settings import Settings, get_settings
from grove.core.progress import Step, quiet
from nodes.embedding.embedding_model import EmbeddingModelError, ModelKey, PriorityLock, hub_snapshot, load_model, model_key
from nodes.embedding.embedding_runtime import EncoderRuntime, TorchEncoder, load_runtime

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "ChunkingMode",
    "Embedder",
    "embed_chunks",
    "embed_documents",
    "embed_query",
    "get_embedder",
    "reset_embedder",
]

ChunkingMode = Literal["late", "naive"]

MAX_TITLE_CHARS = 200
"""A document title longer than this is cut before it goes into the prompt."""

def _load_embedder(key: ModelKey, settings: Settings) -> Embedder:
    """The configured runtime; the PyTorch model at once for the torch runtime, else on first need."""
    if key.local:
        # Before sentence-transformers / huggingface_hub are imported, so it takes effect.
        os.environ["HF_HUB_OFFLINE"] = "1"
    if key.runtime == "torch":
        model = load_model(key, settings)
        return Embedder(model, runtime=load_runtime(Path(key.source), settings, lambda: model))
    source = Path(key.source) if key.local else Path(hub_snapshot(key.source))
    try:
        runtime = load_runtime(source, settings, lambda: load_model(key, settings))
    except Exception as exc:
        raise EmbeddingModelError(
            f"could not start the {key.runtime} embedding runtime for {key.source}: {exc}. "
            "Run `make models` again, or set embedding_runtime=torch (env GROVE_EMBEDDING_RUNTIME)."
        ) from exc
    return Embedder(runtime=runtime, load_model=lambda: load_model(key, settings))


RECENT_DOCUMENTS = 4096
"""Document vectors an embedder keeps (`recall_documents`): a turn's passages hold a few hundred
distinct words and about eight sentence windows, and the next turn often shares them."""
RECENT_QUERIES = 32


class Recent:
    """The last `size` vectors by their text, the oldest dropped first; safe to share between threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def get(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        with self._lock:
            return {t: self._vectors[t] for t in texts if t in self._vectors}

    def put(self, pairs: Iterable[tuple[str, np.ndarray]]) -> dict[str, np.ndarray]:
        added = dict(pairs)
        with self._lock:
            self._vectors.update(added)
            while len(self._vectors) > self.size:
                del self._vectors[next(iter(self._vectors))]
        return added


class Embedder:
    """One loaded embedding model and the operations grove needs from it.

    Every model call holds the instance's lock: a fast tokenizer is not safe to
    share between threads (``RuntimeError: Already borrowed``), and two
    concurrent forward passes on a 2-core machine only slow each other down.
    Queries hold it urgently; indexing one batch or window at a time (`PriorityLock`).
    """

    def __init__(
        self,
        model: SentenceTransformer | None = None,
        *,
        runtime: EncoderRuntime | None = None,
        load_model: Callable[[], SentenceTransformer] | None = None,
        settings: Settings | None = None,
    ) -> None:
        """Give the PyTorch ``model``, or a ``runtime`` plus ``load_model`` for the PyTorch model
        that token embeddings need (loaded on first use, not before)."""
        if runtime is None:
            if model is None:
                raise ValueError("an Embedder needs a model or a runtime")
            runtime = TorchEncoder(model)
        self.runtime = runtime
        self._model = model
        self._load_model = load_model
        self._settings = settings
        self._lock = PriorityLock()
        self.dim: int = int(runtime.dim)
        self._recent_documents = Recent(RECENT_DOCUMENTS)
        self._recent_queries = Recent(RECENT_QUERIES)

    @property
    def model(self) -> SentenceTransformer:
        """The PyTorch model: token embeddings for late chunking and late interaction."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    if self._load_model is None:
                        raise RuntimeError(f"the {self.runtime.name} runtime has no PyTorch model to load")
                    self._model = self._load_model()
        return self._model

    @property
    def settings(self) -> Settings:
        """Fixed settings if given, else the live process settings."""
        return self._settings or get_settings()

    @property
    def lock(self) -> PriorityLock:
        """Hold it (`with embedder.lock:`) when using :attr:`model` or :attr:`tokenizer` directly (a reranker)."""
        return self._lock

    @property
    def tokenizer(self) -> Any:
        return self.runtime.tokenizer

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` alone (no special or prompt tokens)."""
        with self._lock:
            return len(self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

    def _encode(self, texts: Sequence[str], prompt: str, *, urgent: bool,
                on_batch: Callable[[list[int], np.ndarray], None] | None = None, done: int = 0,
                progress: Step = quiet) -> np.ndarray:
        """Batch by batch, the lock held per batch; `progress` told between batches.

        Texts are batched in order of length (and put back in order after), so a batch pads
        little: its texts are about as long as each other. `on_batch` gets each batch's text
        indices and vectors as soon as they exist; `done` counts what was embedded before.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        size = max(1, self.settings.embedding_batch_size)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[np.ndarray] = []
        for start in range(0, len(order), size):
            batch = [prompt + texts[i] for i in order[start:start + size]]
            with self._lock.hold(urgent):
                vectors.append(self.runtime.encode(batch, size))
            if on_batch is not None:
                on_batch(order[start:start + size], vectors[-1])
            progress("embed", done + min(start + size, len(texts)), done + len(texts))
        result = np.empty_like(np.concatenate(vectors))
        result[order] = np.concatenate(vectors)
        return result

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector ``[dim]`` (query prompt)."""
        return cast(np.ndarray, self.embed_queries([text])[0])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors ``[n, dim]`` (query prompt)."""
        return self._encode(texts, self.settings.embedding_query_prompt, urgent=True)

    def embed_documents(self, texts: Sequence[str], *, urgent: bool = False) -> np.ndarray:
        """Vectors ``[n, dim]`` of standalone passages (document prompt); background work by default."""
        return self._encode(texts, self.settings.embedding_document_prompt, urgent=urgent)

    def recall_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's document vector, urgently, the ones embedded lately taken from memory: a turn
        embeds the same sentences and words more than once (the passages shown while the model
        writes, then the quote under its answer; the words matched against the user's)."""
        known = self._recent_documents.get(texts)
        new = [t for t in dict.fromkeys(texts) if t not in known]
        if new:
            known.update(self._recent_documents.put(zip(new, self.embed_documents(new, urgent=True), strict=True)))
        return [known[t] for t in texts]

    def recall_query(self, text: str) -> np.ndarray:
        """The query vector of `text`, from memory when the turn asked it already."""
        known = self._recent_queries.get([text])
        if text not in known:
            known.update(self._recent_queries.put([(text, self.embed_query(text))]))
        return known[text]

    @contextmanager
    def _window(self, k: int, n: int, chunks: int, progress: Step) -> Iterator[None]:
        with self._lock.hold(urgent=False):
            yield
        progress("embed", round(chunks * (k + 1) / n), chunks)

    def document_prompt(self, title: str | None) -> str:
        """The document prompt, naming the document's title when `chunk_context` includes it."""
        settings = self.settings
        clean = " ".join((title or "").split())[:MAX_TITLE_CHARS]
        if settings.chunk_context == "none" or not clean:
            return settings.embedding_document_prompt
        return settings.embedding_document_title_prompt.replace("{title}", clean)

    def chunk_inputs(self, chunks: Sequence[Chunk]) -> list[str]:
        """What a naive vector is computed from: the chunk, after its heading path when
        `chunk_context` is ``title+section``."""
        if self.settings.chunk_context != "title+section":
            return [c.text for c in chunks]
        return [f"{' → '.join(c.section)}\n{c.text}" if c.section else c.text for c in chunks]

    def embed_chunks(
        self, text: str, chunks: Sequence[Chunk], mode: ChunkingMode | None = None,
        title: str | None = None, checkpoint: Checkpoint | None = None, progress: Step = quiet,
    ) -> np.ndarray:
        """Vectors ``[len(chunks), dim]`` for chunks of ``text`` (late or naive, default per settings);
        `progress` told between windows or batches.

        With ``chunk_context`` set (see `bench/context_prefix.py` for why), naive vectors are
        computed from ``title: <title> | text: <heading path>\n<chunk>``; late chunking puts the
        title in the prompt only, since its chunks are spans of the document text (which
        holds the headings already) and must stay so.
        """
        settings = self.settings
        mode = mode or settings.chunking
        for chunk in chunks:
            if text[chunk.start : chunk.end] != chunk.text:
                raise ValueError(
                    f"chunk {chunk.position} does not match text[{chunk.start}:{chunk.end}]: "
                    "chunks must be spans of this very text (join_pages(pages) for chunk_pages)"
                )
        prompt = self.document_prompt(title)
        if mode == "naive" and checkpoint is not None:
            return self._resumed(self.chunk_inputs(chunks), [c.position for c in chunks], prompt, checkpoint,
                                 progress)
        if mode == "naive":
            return self._encode(self.chunk_inputs(chunks), prompt, urgent=False, progress=progress)
        if mode != "late":
            raise ValueError(f"unknown chunking mode {mode!r} (expected 'late' or 'naive')")
        return late_chunk_embeddings(
            self.model,
            text,
            chunks,
            prompt=prompt,
            window_tokens=min(settings.late_window_tokens, settings.embedding_max_tokens),
            overlap_tokens=settings.late_window_overlap_tokens,
            window_guard=lambda k, n: self._window(k, n, len(chunks), progress),
            tokenize_guard=lambda: self._lock.hold(urgent=False),
        )


    def _resumed(self, inputs: list[str], positions: list[int], prompt: str, checkpoint: Checkpoint,
                 progress: Step) -> np.ndarray:
        """Naive vectors, each batch kept by `checkpoint` as it is made; what it holds is not redone."""
        kept = checkpoint.load()
        result = np.zeros((len(inputs), self.dim), dtype=np.float32)
        todo = []
        for index, position in enumerate(positions):
            if position in kept:
                result[index] = kept[position]
            else:
                todo.append(index)

        def keep(batch: list[int], vectors: np.ndarray) -> None:
            checkpoint.save({positions[todo[i]]: vector.tolist() for i, vector in zip(batch, vectors)})

        if todo:
            result[todo] = self._encode([inputs[i] for i in todo], prompt, urgent=False, on_batch=keep,
                                        done=len(inputs) - len(todo), progress=progress)
        return result


class Checkpoint(Protocol):
    """Where a long embedding keeps its finished batches (a background job's, in Postgres), so a
    job stopped midway resumes from its last batch instead of from zero."""

    def load(self) -> dict[int, list[float]]: ...

    def save(self, vectors: dict[int, list[float]]) -> None: ...


_lock = threading.Lock()
_instance: Embedder | None = None
_instance_key: ModelKey | None = None


def get_embedder() -> Embedder:
    """The process-wide embedder for the current model settings, loaded on first use."""
    global _instance, _instance_key
    settings = get_settings()
    key = model_key(settings)
    with _lock:
        if _instance is None or _instance_key != key:
            _instance, _instance_key = _load_embedder(key, settings), key  # the old one stays until this succeeds
        return _instance


def reset_embedder() -> None:
    """Forget the loaded model (tests); the next :func:`get_embedder` loads again."""
    global _instance, _instance_key
    with _lock:
        _instance, _instance_key = None, None


# ----------------------------------------------------------------------------------- Prefect tasks


@task(name="embed-chunks")
def embed_chunks(
    text: str, chunks: list[Chunk], mode: ChunkingMode | None = None, title: str | None = None,
    checkpoint: Checkpoint | None = None, progress: Step = quiet,
) -> list[list[float]]:
    """Chunk vectors of one document (late chunking unless settings say naive); with a
    `checkpoint`, naive vectors are kept batch by batch and a rerun resumes from them."""
    return cast(list[list[float]],
                get_embedder().embed_chunks(text, chunks, mode, title, checkpoint, progress).tolist())


@task(name="embed-query")
def embed_query(text: str) -> list[float]:
    """The vector of a search query (query prompt)."""
    return cast(list[float], get_embedder().embed_query(text).tolist())


@task(name="embed-documents")
def embed_documents(texts: list[str]) -> list[list[float]]:
    """Vectors of standalone passages (document prompt), e.g. saved Q&A pairs."""
    return cast(list[list[float]], get_embedder().embed_documents(texts).tolist())
