"""Late chunking with the real EmbeddingGemma-300M (bf16, as grove runs it).

The model is loaded once for the whole session; the file skips only when the
weights are not assembled (``make models``).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from chunking import Chunk, chunk_text, split_paragraphs
from chunking import late as late_module
from chunking.late import (
    late_chunk_embeddings,
    naive_chunk_embeddings,
    tokenize_document,
    window_bounds,
)

from .texts import DOCUMENT, LONG_PARAGRAPHS, generate_text
from tests.support.prerequisites import require

pytestmark = pytest.mark.models

MODEL_DIR = Path(__file__).resolve().parents[2] / ".grove" / "models" / "embeddinggemma-300m"
DOC_PROMPT = "title: none | text: "
QUERY_PROMPT = "task: search result | query: "

# An entity named only in the first paragraph; later paragraphs refer back to it.
ANTONOVKA = """\
Антоновка — старинный русский сорт яблони, известный с девятнадцатого века. Его плоды крупные, зеленовато-жёлтые, с сильным пряным ароматом.

Этот сорт созревает в конце сентября, а собранные плоды лежат в погребе до трёх месяцев. Вкус у них кисло-сладкий и становится мягче при хранении.

Она переносит морозы до минус сорока градусов, поэтому её сажают даже на Урале и в Сибири. Дерево живёт больше полувека.

Из её плодов делают мочёные яблоки, пастилу и варенье. В деревнях её яблоки раньше клали в квашеную капусту."""

# The same structure about another variety: without context the paragraphs look alike.
BELY_NALIV = """\
Белый налив — летний сорт яблони, выведенный народной селекцией в Прибалтике. Его плоды средние, почти белые, с тонкой кожицей.

Этот сорт созревает уже в конце июля, но плоды хранятся не дольше двух недель. Вкус у них кисловатый, мякоть рыхлеет за несколько дней.

Он плохо переносит сильные морозы и в северных районах подмерзает. Зато дерево рано начинает плодоносить.

Из его плодов варят компот и делают сок. Свежими их едят сразу после сбора, потому что они быстро мнутся."""

# query -> (document, paragraph index); every target paragraph names its entity only by pronoun
QUERIES = [
    ("Когда созревает антоновка?", "antonovka", 1),
    ("Выдерживает ли антоновка морозы?", "antonovka", 2),
    ("Что готовят из антоновки?", "antonovka", 3),
    ("Когда созревает белый налив?", "naliv", 1),
    ("Переносит ли белый налив морозы?", "naliv", 2),
    ("Что делают из яблок белый налив?", "naliv", 3),
]

LONG_TEXT = DOCUMENT + "\n\n" + "\n\n".join(LONG_PARAGRAPHS)


@pytest.fixture(scope="session")
def gemma():
    if not (MODEL_DIR / "config.json").exists():
        require(f"EmbeddingGemma is not assembled at {MODEL_DIR}: run `make models`")
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(min(2, os.cpu_count() or 1))
    return SentenceTransformer(
        str(MODEL_DIR), device="cpu", local_files_only=True, model_kwargs={"dtype": torch.bfloat16}
    )


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.atleast_2d(a).astype(np.float64)
    b = np.atleast_2d(b).astype(np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def paragraph_chunks(text: str) -> list[Chunk]:
    return [Chunk(s.start, s.end, s.text, i, s.start) for i, s in enumerate(split_paragraphs(text))]


# ----------------------------------------------------------------------------------- (a) exactness


@pytest.mark.parametrize("prompt", [DOC_PROMPT, ""])
def test_whole_text_chunk_reproduces_encode(gemma, prompt: str) -> None:
    whole = [Chunk(0, len(ANTONOVKA), ANTONOVKA, 0, 0)]
    late = late_chunk_embeddings(gemma, ANTONOVKA, whole, prompt=prompt)
    encoded = gemma.encode([ANTONOVKA], prompt=prompt or None)
    cos = float(cosine(late, encoded)[0])
    diff = float(np.abs(late - encoded).max())
    print(f"\nexactness prompt={prompt!r}: cosine {cos:.7f}, max |diff| {diff:.2e}")
    assert late.shape == (1, 768) and late.dtype == np.float32
    assert cos > 1 - 1e-3
    assert diff < 1e-2


# ----------------------------------------------------------------------------------- (b) token spans


def _content_tokens(text: str, offsets: list[tuple[int, int]]) -> list[int]:
    return [i for i, (s, e) in enumerate(offsets) if text[s:e].strip()]


@pytest.mark.parametrize("seed", [None, 1, 2, 3, 4, 5, 6])
def test_chunks_map_to_ordered_token_spans_covering_the_text(gemma, seed: int | None) -> None:
    text = LONG_TEXT if seed is None else generate_text(seed, paragraphs=12)
    chunks = chunk_text(text, target_chars=200, overlap_chars=60)
    assert len(chunks) > 3
    doc = tokenize_document(gemma.tokenizer, text, chunks, DOC_PROMPT)
    news = tokenize_document(
        gemma.tokenizer,
        text,
        [Chunk(c.overlap_start, c.end, text[c.overlap_start : c.end], c.position, c.overlap_start)
         for c in chunks],
        DOC_PROMPT,
    ).chunk_spans
    assert doc.prefix_ids == [gemma.tokenizer.bos_token_id]
    assert doc.suffix_ids == [gemma.tokenizer.eos_token_id]
    for (lo, hi), (new_lo, new_hi), chunk in zip(doc.chunk_spans, news, chunks, strict=True):
        assert 0 <= lo <= new_lo < new_hi == hi <= len(doc.text_ids)
        # the smallest token range covering the chunk: its end tokens overlap the chunk
        assert doc.text_offsets[lo][0] <= chunk.start < doc.text_offsets[lo][1]
        assert doc.text_offsets[hi - 1][0] < chunk.end <= doc.text_offsets[hi - 1][1]
    starts = [lo for lo, _ in doc.chunk_spans]
    ends = [hi for _, hi in doc.chunk_spans]
    assert starts == sorted(starts) and ends == sorted(ends)
    # the new parts cover every token with content, and overlap at most at a boundary token
    covered = [0] * len(doc.text_ids)
    for lo, hi in news:
        for i in range(lo, hi):
            covered[i] += 1
    content = _content_tokens(text, doc.text_offsets)
    assert all(covered[i] >= 1 for i in content)
    assert sum(c > 1 for c in covered) <= len(chunks)
    assert all((a_hi - b_lo) <= 1 for (_, a_hi), (b_lo, _) in zip(news, news[1:]))


def test_a_chunk_always_maps_to_at_least_one_token(gemma) -> None:
    text = "Антоновка созревает в сентябре."
    tiny = [
        Chunk(3, 4, text[3:4], 0, 3),  # one letter inside a word
        Chunk(9, 10, text[9:10], 1, 9),  # the space between words
        Chunk(len(text) - 1, len(text), ".", 2, len(text) - 1),
    ]
    doc = tokenize_document(gemma.tokenizer, text, tiny, DOC_PROMPT)
    assert all(hi - lo == 1 for lo, hi in doc.chunk_spans)
    vectors = late_chunk_embeddings(gemma, text, tiny, prompt=DOC_PROMPT)
    assert np.isfinite(vectors).all()


# ----------------------------------------------------------------------------------- (c) long documents


def _reference_long_late(model, doc, windows, outs) -> np.ndarray:
    """Long late chunking written out token by token, straight from its definition.

    ``outs`` are the token embeddings of each window as the model produced them.
    """
    import torch

    head = len(doc.prefix_ids) + len(doc.prompt_ids)
    n = len(doc.text_ids)
    token_emb, owner = [], []
    for j in range(n):
        def edge_distance(k: int, j: int = j) -> float:
            ws, we = windows[k]
            left = j - ws if ws > 0 else math.inf  # the document's own ends cut no context
            right = we - 1 - j if we < n else math.inf
            return min(left, right)

        holders = [k for k, (ws, we) in enumerate(windows) if ws <= j < we]
        owner.append(max(holders, key=edge_distance))
        token_emb.append(outs[owner[j]][head + j - windows[owner[j]][0]].float())
    frames = [torch.cat([out[:head], out[-len(doc.suffix_ids):]]).float() for out in outs]
    pooled = []
    for lo, hi in doc.chunk_spans:
        frame = frames[owner[(lo + hi - 1) // 2]]
        pooled.append(torch.stack(token_emb[lo:hi] + list(frame)).mean(0))
    with torch.inference_mode():
        features = {"sentence_embedding": torch.stack(pooled).to(outs[0].dtype)}
        for module in list(model)[2:]:
            features = module(features)
    return features["sentence_embedding"].float().numpy()


def test_long_late_chunking_matches_its_definition_and_keeps_context(
    gemma, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunks = chunk_text(LONG_TEXT, target_chars=300, overlap_chars=80)
    doc = tokenize_document(gemma.tokenizer, LONG_TEXT, chunks, DOC_PROMPT)
    windows = window_bounds(len(doc.text_ids), 128 - doc.frame_length, 32)
    assert 550 <= len(doc.text_ids) <= 800 and len(windows) >= 5
    kept = [(ks, ke) for _, _, ks, ke in windows]
    assert kept[0][0] == 0 and kept[-1][1] == len(doc.text_ids)
    assert all(a[1] == b[0] for a, b in zip(kept, kept[1:]))  # every token pooled from one window
    assert all(prev[1] - nxt[0] >= 32 for prev, nxt in zip(windows, windows[1:]))
    crossing = [i for i, (lo, hi) in enumerate(doc.chunk_spans)
                if any(lo < ks < hi for ks, _ in kept[1:])]
    assert len(crossing) >= 3  # chunks spanning window boundaries

    seen: list[tuple[list[int], object]] = []

    def recording_run_window(layout, ids, device):
        out = run_window(layout, ids, device)
        seen.append((list(ids), out.clone()))
        return out

    run_window = late_module._run_window
    monkeypatch.setattr(late_module, "_run_window", recording_run_window)
    small = late_chunk_embeddings(gemma, LONG_TEXT, chunks, prompt=DOC_PROMPT,
                                  window_tokens=128, overlap_tokens=32)
    monkeypatch.undo()
    head = doc.prefix_ids + doc.prompt_ids
    # every window is framed like a real input: BOS + prompt + its slice + EOS
    assert [ids for ids, _ in seen] == [
        head + doc.text_ids[ws:we] + doc.suffix_ids for ws, we, _, _ in windows
    ]
    reference = _reference_long_late(
        gemma, doc, [(ws, we) for ws, we, _, _ in windows], [out for _, out in seen]
    )
    assert cosine(small, reference).min() > 0.9999

    big = late_chunk_embeddings(gemma, LONG_TEXT, chunks, prompt=DOC_PROMPT)
    naive = naive_chunk_embeddings(gemma, [c.text for c in chunks], prompt=DOC_PROMPT)
    small_vs_big, naive_vs_big = cosine(small, big), cosine(naive, big)
    print("\nwindow 128/32 vs one window:", np.round(small_vs_big, 3).tolist())
    print("naive          vs one window:", np.round(naive_vs_big, 3).tolist())
    # far from any window edge that cuts context: the first chunk (document start, 32+ tokens
    # before its window's right edge) is nearly the same vector
    _, first_hi = doc.chunk_spans[0]
    assert windows[0][1] - first_hi >= 32
    assert small_vs_big[0] > 0.95
    # elsewhere 128-token windows lose real context, yet stay closer to it than chunks alone
    assert small_vs_big.mean() > naive_vs_big.mean() + 0.05
    assert (small_vs_big > naive_vs_big - 0.02).all()


# ----------------------------------------------------------------------------------- (d) vectors


def test_late_vectors_are_normalised_and_differ_from_naive(gemma) -> None:
    chunks = paragraph_chunks(ANTONOVKA)
    late = late_chunk_embeddings(gemma, ANTONOVKA, chunks, prompt=DOC_PROMPT)
    naive = naive_chunk_embeddings(gemma, [c.text for c in chunks], prompt=DOC_PROMPT)
    assert late.shape == naive.shape == (4, 768)
    assert late.dtype == naive.dtype == np.float32
    assert np.allclose(np.linalg.norm(late, axis=1), 1.0, atol=5e-3)  # bf16 rounding
    cos = cosine(late, naive)
    print("\nlate vs naive per chunk:", np.round(cos, 3).tolist())
    assert (cos < 0.99).all() and cos.mean() < 0.95


# ----------------------------------------------------------------------------------- (e) retrieval


def test_late_chunking_resolves_pronouns_in_retrieval(gemma) -> None:
    docs = {"antonovka": ANTONOVKA, "naliv": BELY_NALIV}
    ids = [(name, i) for name, text in docs.items() for i in range(len(paragraph_chunks(text)))]
    vectors = {
        "naive": np.concatenate([
            naive_chunk_embeddings(gemma, [c.text for c in paragraph_chunks(t)], prompt=DOC_PROMPT)
            for t in docs.values()
        ]),
        "late": np.concatenate([
            late_chunk_embeddings(gemma, t, paragraph_chunks(t), prompt=DOC_PROMPT)
            for t in docs.values()
        ]),
    }
    queries = gemma.encode([q for q, _, _ in QUERIES], prompt=QUERY_PROMPT)
    ranks: dict[str, list[int]] = {}
    for mode, matrix in vectors.items():
        scores = queries @ matrix.T
        ranks[mode] = [
            int((scores[j] > scores[j, ids.index((name, para))]).sum()) + 1
            for j, (_, name, para) in enumerate(QUERIES)
        ]
    for mode, r in ranks.items():
        print(f"\n{mode:5}: target ranks {r} (of {len(ids)}), MRR {np.mean([1 / x for x in r]):.3f}")
    assert all(late <= naive for late, naive in zip(ranks["late"], ranks["naive"]))
    assert sum(ranks["late"]) < sum(ranks["naive"])
