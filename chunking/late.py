"""Late chunking: chunk vectors pooled from the token embeddings of the whole document.

A chunk embedded alone (:func:`naive_chunk_embeddings`) loses what "Она ..." or "Этот сорт ..." refers to.
Late chunking (Günther et al., 2024) runs the transformer once over the whole document, mean-pools each
chunk's token span (from the tokenizer's offset mapping) and applies the model's modules after pooling, so
a chunk of the whole text reproduces ``model.encode``. A long document is cut into overlapping windows,
each token kept from the window where it lies farthest from an edge. The prompt's frame tokens are pooled
into every chunk (``pool_prompt=True``) as ``encode`` does, keeping vectors in the model's distribution.
Figures: bench/README.md, «Late vs naive chunking» (bench.late_vs_naive).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager as ContextManager
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .chunker import Chunk

if TYPE_CHECKING:  # torch / sentence-transformers are heavy; import them only when used
    import torch
    from sentence_transformers import SentenceTransformer

__all__ = [
    "LateChunkingError",
    "TokenizedDocument",
    "late_chunk_embeddings",
    "naive_chunk_embeddings",
    "tokenize_document",
    "window_bounds",
]


class LateChunkingError(ValueError):
    """The model cannot do exact late chunking (not Transformer → mean Pooling → ...)."""


@dataclass(frozen=True, slots=True)
class TokenizedDocument:
    """``prompt + text`` tokenised once, split into frame and text tokens.

    ``prefix_ids`` / ``suffix_ids`` are the special tokens the tokenizer adds
    (``<bos>`` / ``<eos>`` for Gemma, ``[CLS]`` / ``[SEP]`` for BERT);
    ``prompt_ids`` are the tokens lying wholly inside the prompt; ``text_ids``
    the rest, with ``text_offsets`` as character offsets into ``text`` (a
    token straddling the prompt/text boundary, like Gemma's ``"▁При"`` after
    the prompt's trailing space, starts at 0). ``chunk_spans[i]`` is chunk
    ``i``'s half-open token range into ``text_ids``.
    """

    prefix_ids: list[int]
    prompt_ids: list[int]
    text_ids: list[int]
    suffix_ids: list[int]
    text_offsets: list[tuple[int, int]]
    chunk_spans: list[tuple[int, int]]

    @property
    def frame_length(self) -> int:
        return len(self.prefix_ids) + len(self.prompt_ids) + len(self.suffix_ids)


# ----------------------------------------------------------------------------------- model layout


@dataclass(frozen=True, slots=True)
class _Layout:
    transformer: Any
    pooling: Any
    after: list[Any]
    tokenizer: Any


def _layout(model: SentenceTransformer) -> _Layout:
    """Check the pipeline is ``Transformer → mean Pooling → ...`` and return its parts."""
    from sentence_transformers.sentence_transformer.modules import Pooling

    modules = list(model)
    pool_index = next((i for i, m in enumerate(modules) if isinstance(m, Pooling)), None)
    if pool_index is None:
        raise LateChunkingError(
            "late chunking needs a sentence-transformers model with a Pooling module; "
            f"this pipeline is {[type(m).__name__ for m in modules]}"
        )
    if pool_index != 1:
        raise LateChunkingError(
            "late chunking needs the Pooling module right after the Transformer; "
            f"this pipeline is {[type(m).__name__ for m in modules]}"
        )
    pooling = modules[pool_index]
    if pooling.pooling_mode != "mean":
        raise LateChunkingError(
            f"late chunking pools token spans by mean; this model's Pooling mode is "
            f"{pooling.pooling_mode!r}, so span pooling would not match what it was trained for"
        )
    transformer = modules[0]
    tokenizer = getattr(transformer, "tokenizer", None)
    if tokenizer is None or not getattr(tokenizer, "is_fast", False):
        raise LateChunkingError(
            "late chunking needs a fast (Rust) tokenizer: character offsets map chunks to tokens"
        )
    return _Layout(transformer, pooling, modules[pool_index + 1 :], tokenizer)


# ----------------------------------------------------------------------------------- tokens


def _token_span(starts: list[int], ends: list[int], start: int, end: int) -> tuple[int, int]:
    """Tokens whose offsets overlap ``[start, end)``; never empty if there are tokens.

    ``ends`` is non-decreasing and ``starts`` too (offsets of one left-to-right
    tokenisation), so both ends of the range come from a bisection.
    """
    n = len(starts)
    lo = bisect.bisect_right(ends, start)  # first token ending after `start`
    hi = bisect.bisect_left(starts, end)  # first token starting at or after `end`
    if hi <= lo:  # empty (or zero-width) span: the token at / right after it
        lo = min(lo, n - 1)
        hi = lo + 1
    return lo, hi


def tokenize_document(
    tokenizer: Any, text: str, chunks: Sequence[Chunk], prompt: str = ""
) -> TokenizedDocument:
    """Tokenise ``prompt + text`` once and map each chunk to its token span."""
    enc = tokenizer(
        prompt + text,
        add_special_tokens=True,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        truncation=False,
        verbose=False,
    )
    ids: list[int] = list(enc["input_ids"])
    offsets: list[tuple[int, int]] = [tuple(o) for o in enc["offset_mapping"]]
    special: list[int] = list(enc["special_tokens_mask"])
    first = 0
    while first < len(ids) and special[first]:
        first += 1
    last = len(ids)
    while last > first and special[last - 1]:
        last -= 1
    if any(special[first:last]):
        raise LateChunkingError("the tokenizer put special tokens inside the text")
    plen = len(prompt)
    prompt_end = first
    while prompt_end < last and offsets[prompt_end][1] <= plen:
        prompt_end += 1
    text_ids = ids[prompt_end:last]
    text_offsets = [
        (max(s - plen, 0), max(e - plen, 0)) for s, e in offsets[prompt_end:last]
    ]
    if chunks and not text_ids:
        raise LateChunkingError("the text has no tokens, but chunks were given")
    starts = [s for s, _ in text_offsets]
    ends = [e for _, e in text_offsets]
    spans = []
    for chunk in chunks:
        if not 0 <= chunk.start <= chunk.end <= len(text):
            raise ValueError(f"chunk {chunk.position} [{chunk.start}, {chunk.end}) is outside the text")
        spans.append(_token_span(starts, ends, chunk.start, chunk.end))
    return TokenizedDocument(
        prefix_ids=ids[:first],
        prompt_ids=ids[first:prompt_end],
        text_ids=text_ids,
        suffix_ids=ids[last:],
        text_offsets=text_offsets,
        chunk_spans=spans,
    )


def window_bounds(n_tokens: int, capacity: int, overlap: int) -> list[tuple[int, int, int, int]]:
    """Macro windows over ``n_tokens`` text tokens: ``(start, end, keep_start, keep_end)``.

    Windows hold ``capacity`` tokens and overlap by at least ``overlap``; the
    last one is moved back to end at the text's end (full context instead of a
    short tail). ``[keep_start, keep_end)`` are the tokens this window owns:
    each overlap is split at its midpoint, which is exactly "keep a token from
    the window where it is farthest from a window edge". The kept ranges tile
    ``[0, n_tokens)``.
    """
    if capacity < 1:
        raise ValueError(f"window capacity must be positive, got {capacity}")
    if not 0 <= overlap < capacity:
        raise ValueError(f"overlap must be in [0, {capacity}), got {overlap}")
    if n_tokens <= capacity:
        return [(0, n_tokens, 0, n_tokens)]
    step = capacity - overlap
    starts = list(range(0, n_tokens - capacity, step)) + [n_tokens - capacity]
    windows = [(s, s + capacity) for s in starts]
    cuts = [0]
    for (_, prev_end), (next_start, _) in zip(windows, windows[1:], strict=False):
        # token j goes right when (j - next_start) > (prev_end - 1 - j)
        cuts.append((next_start + prev_end) // 2)
    cuts.append(n_tokens)
    return [(s, e, cuts[i], cuts[i + 1]) for i, (s, e) in enumerate(windows)]


# ----------------------------------------------------------------------------------- embeddings


def _dimension(model: Any) -> int:
    """Output width of a model or module (``get_embedding_dimension`` since sentence-transformers 6)."""
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter() or 0)


def _run_window(layout: _Layout, ids: list[int], device: torch.device) -> torch.Tensor:
    """Token embeddings ``[len(ids), hidden]`` of one unpadded window."""
    import torch

    input_ids = torch.tensor([ids], dtype=torch.long, device=device)
    features: dict[str, Any] = {
        "input_ids": input_ids,
        "attention_mask": torch.ones_like(input_ids),
        "modality": "text",
    }
    out = layout.transformer(features)
    return cast("torch.Tensor", out["token_embeddings"][0])


def late_chunk_embeddings(
    model: SentenceTransformer,
    text: str,
    chunks: Sequence[Chunk],
    *,
    prompt: str = "",
    window_tokens: int = 2048,
    overlap_tokens: int = 256,
    pool_prompt: bool = True,
    window_guard: Callable[[int, int], ContextManager[object]] | None = None,
    tokenize_guard: Callable[[], ContextManager[object]] | None = None,
) -> np.ndarray:
    """Late-chunked vectors ``[len(chunks), dim]`` (float32, normalised like ``model.encode``).

    ``chunks`` are character spans into ``text`` (see :class:`~chunking.chunker.Chunk`);
    ``prompt`` is the model's document prompt. ``window_tokens`` (capped at the
    model's ``max_seq_length``) is the macro window size including special and
    prompt tokens; ``overlap_tokens`` the minimum overlap of neighbouring
    windows. ``pool_prompt`` adds the frame tokens (special + prompt tokens,
    as the Pooling module would) to every chunk's mean - see the module
    docstring for why that is the default. ``window_guard(k, n)``, if given, wraps the
    forward pass of window ``k`` of ``n`` (the caller holds the model only per window and
    can report progress or stop between windows); ``tokenize_guard()`` wraps the one
    tokenizer call (a fast tokenizer is not safe to share between threads).
    """
    import torch

    guard = window_guard or (lambda k, n: nullcontext())
    layout = _layout(model)
    if not chunks:
        return np.zeros((0, _dimension(model)), dtype=np.float32)
    with (tokenize_guard or nullcontext)():
        doc = tokenize_document(layout.tokenizer, text, chunks, prompt)

    max_len = model.max_seq_length or window_tokens
    window = min(window_tokens, max_len)
    capacity = window - doc.frame_length
    if capacity < 1:
        raise ValueError(
            f"window of {window} tokens leaves no room for text after "
            f"{doc.frame_length} special and prompt tokens"
        )
    overlap = min(overlap_tokens, capacity - 1)
    windows = window_bounds(len(doc.text_ids), capacity, overlap)

    # The frame tokens the model's Pooling averages in with the text: all special and
    # prompt tokens, or - include_prompt=False with a prompt - only the trailing special
    # tokens (sentence-transformers' prompt_length counts BOS, so BOS goes with the prompt).
    n_prefix, n_prompt, n_suffix = len(doc.prefix_ids), len(doc.prompt_ids), len(doc.suffix_ids)
    frame_head = n_prefix + n_prompt if (layout.pooling.include_prompt or not prompt) else 0

    device = model.device
    hidden = _dimension(layout.pooling)
    sums = torch.zeros(len(chunks), hidden, dtype=torch.float32)
    counts = torch.zeros(len(chunks), dtype=torch.float32)
    frame_sums: list[torch.Tensor] = []
    # chunk -> window holding its middle token (its frame tokens are used)
    mids = [(lo + hi - 1) // 2 for lo, hi in doc.chunk_spans]
    frame_of = [
        next(k for k, (_, _, ks, ke) in enumerate(windows) if ks <= m < ke) for m in mids
    ]
    token_dtype = None
    model.eval()  # as encode() does: no dropout
    with torch.inference_mode():
        for k, (ws, we, keep_start, keep_end) in enumerate(windows):
            ids = doc.prefix_ids + doc.prompt_ids + doc.text_ids[ws:we] + doc.suffix_ids
            with guard(k, len(windows)):
                emb = _run_window(layout, ids, device)
            token_dtype = emb.dtype
            emb = emb.float().cpu()
            text_emb = emb[n_prefix + n_prompt : n_prefix + n_prompt + (we - ws)]
            for i, (lo, hi) in enumerate(doc.chunk_spans):
                lo, hi = max(lo, keep_start), min(hi, keep_end)
                if lo < hi:
                    sums[i] += text_emb[lo - ws : hi - ws].sum(dim=0)
                    counts[i] += hi - lo
            if pool_prompt:
                frame_sums.append(emb[:frame_head].sum(dim=0) + emb[len(ids) - n_suffix :].sum(dim=0))
            del emb, text_emb
        if pool_prompt:
            for i, k in enumerate(frame_of):
                sums[i] += frame_sums[k]
                counts[i] += frame_head + n_suffix
        pooled = (sums / counts.clamp(min=1e-9).unsqueeze(1)).to(token_dtype or torch.float32)
        features: dict[str, Any] = {"sentence_embedding": pooled.to(device)}
        for module in layout.after:
            features = module(features)
        vectors = features["sentence_embedding"]
        if getattr(model, "truncate_dim", None):
            vectors = vectors[..., : model.truncate_dim]
        return cast(np.ndarray, vectors.float().cpu().numpy().astype(np.float32, copy=False))


def naive_chunk_embeddings(
    model: SentenceTransformer,
    texts: Sequence[str],
    *,
    prompt: str = "",
    batch_size: int = 8,
) -> np.ndarray:
    """Each text embedded on its own: ``model.encode(texts, prompt=prompt)`` as float32."""
    import torch

    if not texts:
        return np.zeros((0, _dimension(model)), dtype=np.float32)
    with torch.inference_mode():
        vectors = model.encode(
            list(texts),
            prompt=prompt or None,
            batch_size=batch_size,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
    return np.asarray(vectors, dtype=np.float32)
