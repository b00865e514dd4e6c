"""Does a chunk embedded with its document title and heading path in front retrieve better?

Run: .venv/bin/python -m bench.context_prefix [--variants plain,title,...]

The Russian Debian set of `bench/datasets.py` (Debian's FAQ and aptitude manual, man pages as
distractors; 161 queries, 1,536 passages), the same passages embedded several ways; exact cosine
search, nDCG@10 / recall@10 / MRR@10 over every query, plus a paired Wilcoxon test against plain.

Each passage gets the context the production parsers would give it: the HTML file's `<title>` as
the document title (a man page: its name and section), and the headings of the DocBook sections
that enclose the passage's own section as its heading path (an h1 equal to the title is dropped,
as `nodes.ingestion.chunk_document.embedding_context` does).

Variants (naive = each passage embedded alone, EmbeddingGemma's document prompt
``title: {title | "none"} | text: {content}``):

* ``plain``            — ``title: none | text: <passage>`` (what grove did before);
* ``title``            — ``title: <title> | text: <passage>``;
* ``title+parents``    — ``title: <title> | text: <enclosing headings>\\n<passage>``;
* ``title+path``       — ``title: <title> | text: <enclosing headings → own heading>\\n<passage>``.
  **Leaks on this set**: every query *is* its section's heading, which `bench/datasets.py` keeps
  out of every passage on purpose, so this variant is string matching, an upper bound only;
* ``late`` / ``late+title`` — late chunking over each source file, document prompt without and
  with the file's title (2,048-token windows, 256 overlap).

Vectors are cached in .grove/cache/eval/ per variant.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.datasets import (  # noqa: E402
    _NUMBER_PREFIX,
    _SECTION_CLASSES,
    APTITUDE_DIR,
    CACHE_DIR,
    FAQ_DIR,
    EvalSet,
    _classes,
    _squash,
    load_ru_eval,
)
from bench.late_vs_naive import ndcg_at_10  # noqa: E402
from chunking import Chunk, late_chunk_embeddings, naive_chunk_embeddings  # noqa: E402

VARIANTS = ("plain", "title", "title+parents", "title+path", "late", "late+title")
PATH_SEPARATOR = " → "


def _heading(section) -> str | None:  # noqa: ANN001 - lxml element
    heads = section.xpath('./div[@class="titlepage"]//*[self::h1 or self::h2 or self::h3 or self::h4]')
    return _squash(heads[0].text_content()) if heads else None


def _docbook_context(path: Path, source: str) -> tuple[str, dict[str, tuple[list[str], str]]]:
    """The file's title and, per unit anchor (as bench.datasets names it), (enclosing headings, own)."""
    from lxml import html

    root = html.parse(str(path)).getroot()
    title = _squash(root.findtext(".//title") or path.stem)
    units: dict[str, tuple[list[str], str]] = {}
    for el in root.iter("div"):
        if not (_classes(el) & _SECTION_CLASSES):
            continue
        own = _heading(el)
        if own is None:
            continue
        heads = el.xpath('./div[@class="titlepage"]//*[self::h1 or self::h2 or self::h3 or self::h4]')
        anchors = heads[0].xpath(".//a[@id]/@id")
        anchor = anchors[0] if anchors else f"{path.stem}-{own}"
        parents = [h for h in (_heading(a) for a in el.iterancestors("div")
                               if _classes(a) & _SECTION_CLASSES) if h][::-1]
        units.setdefault(f"{source}/{path.stem}#{anchor}", (parents, own))
        for entry in el.xpath('.//div[contains(@class, "qandaset")]//tr[@class="question"]'):
            ids = entry.xpath(".//a[@id]/@id")
            question = _squash(entry.text_content())
            key = ids[-1] if ids else _NUMBER_PREFIX.sub("", question)[:40]
            units.setdefault(f"{source}/{path.stem}#{key}", ([*parents, own], question))
    return title, units


def passage_contexts(evalset: EvalSet) -> tuple[list[str], list[list[str]], list[str]]:
    """Per passage: document title, enclosing headings, own heading ('' for man pages)."""
    titles: dict[str, str] = {}
    units: dict[str, tuple[list[str], str]] = {}
    for directory, source, pattern in ((FAQ_DIR, "debian-faq-ru", "*.ru.html"),
                                        (APTITUDE_DIR, "aptitude-doc-ru", "*.html")):
        for path in sorted(directory.glob(pattern)):
            title, found = _docbook_context(path, source)
            titles[f"{source}/{path.stem}"] = title
            for key, value in found.items():
                units.setdefault(key, value)
    doc_titles, parents, owns = [], [], []
    missing = 0
    for passage in evalset.passages:
        if passage.source.startswith("manpages-ru/"):
            section, name = passage.source.split("/")[1:3]
            doc_titles.append(f"{name.rsplit('.', 1)[0]} ({section.removeprefix('man')})")
            parents.append([])
            owns.append("")
            continue
        title = titles[passage.source.split("#", 1)[0]]
        found = units.get(passage.source)
        if found is None:
            missing += 1
            found = ([], "")
        path = [h for h in found[0] if h != title]
        doc_titles.append(title)
        parents.append(path)
        owns.append(found[1] if found[1] != title else "")
    if missing:
        print(f"  note: {missing} passages without a heading context")
    return doc_titles, parents, owns


def naive_inputs(variant: str, evalset: EvalSet) -> list[tuple[str, str]]:
    """(prompt, text) per passage for a naive variant."""
    titles, parents, owns = passage_contexts(evalset)
    out = []
    for passage, title, above, own in zip(evalset.passages, titles, parents, owns):
        if variant == "plain":
            out.append(("title: none | text: ", passage.text))
            continue
        path = above + ([own] if variant == "title+path" and own else [])
        head = PATH_SEPARATOR.join(path) if variant != "title" else ""
        out.append((f"title: {title} | text: ", f"{head}\n{passage.text}" if head else passage.text))
    return out


def _input_key(prompt: str, text: str) -> str:
    return hashlib.sha1(f"{prompt}\x00{text}".encode()).hexdigest()


def _known_vectors(dtype: str) -> dict[str, np.ndarray]:
    """Naive vectors of every (prompt, text) embedded by an earlier variant: not embedded twice."""
    known: dict[str, np.ndarray] = {}
    for keys_path in CACHE_DIR.glob(f"context_*_{dtype}.keys.npy"):
        vectors_path = keys_path.with_name(keys_path.name.replace(".keys.npy", ".npy"))
        if vectors_path.exists():
            for key, vector in zip(np.load(keys_path), np.load(vectors_path)):
                known[str(key)] = vector
    return known


def embed_variant(variant: str, evalset: EvalSet, embedder) -> np.ndarray:  # noqa: ANN001
    dtype = embedder.settings.embedding_dtype
    key = hashlib.sha256("".join(p.id + p.text for p in evalset.passages).encode()).hexdigest()[:12]
    path = CACHE_DIR / f"context_{variant.replace('+', '_')}_{key}_{dtype}.npy"
    if path.exists():
        return np.load(path)
    model = embedder.model
    result = np.zeros((len(evalset.passages), embedder.dim), dtype=np.float32)
    started = time.perf_counter()
    keys: list[str] = []
    if variant.startswith("late"):
        titles, _, _ = passage_contexts(evalset)
        documents: dict[str, list[int]] = defaultdict(list)
        for index, passage in enumerate(evalset.passages):
            documents[passage.source.split("#", 1)[0]].append(index)
        for n, indexes in enumerate(documents.values()):
            text, chunks = "", []
            for position, i in enumerate(indexes):
                if text:
                    text += "\n\n"
                start = len(text)
                text += evalset.passages[i].text
                chunks.append(Chunk(start=start, end=len(text), text=evalset.passages[i].text,
                                    position=position, overlap_start=start))
            title = titles[indexes[0]] if variant == "late+title" else "none"
            with embedder.lock:
                result[indexes] = late_chunk_embeddings(model, text, chunks, prompt=f"title: {title} | text: ",
                                                        window_tokens=2048, overlap_tokens=256)
            if n % 40 == 0:
                print(f"  {variant}: {n}/{len(documents)} documents, {time.perf_counter() - started:.0f} s, "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
    else:
        inputs = naive_inputs(variant, evalset)
        keys = [_input_key(prompt, text) for prompt, text in inputs]
        known = _known_vectors(dtype)
        todo: dict[str, list[int]] = defaultdict(list)
        for i, ((prompt, _), input_key) in enumerate(zip(inputs, keys)):
            if input_key in known:
                result[i] = known[input_key]
            else:
                todo[prompt].append(i)
        total = sum(len(v) for v in todo.values())
        print(f"  {variant}: {len(inputs) - total} passages reused, {total} to embed", flush=True)
        done = 0
        for prompt, indexes in todo.items():
            for begin in range(0, len(indexes), 64):
                part = indexes[begin : begin + 64]
                with embedder.lock:
                    result[part] = naive_chunk_embeddings(model, [inputs[i][1] for i in part],
                                                          prompt=prompt, batch_size=8)
                done += len(part)
                if done % 256 < len(part):
                    print(f"  {variant}: {done}/{total} passages, {time.perf_counter() - started:.0f} s, "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"  {variant}: embedded in {time.perf_counter() - started:.0f} s", flush=True)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    np.save(path, result)
    if keys:
        np.save(path.with_name(path.name.replace(".npy", ".keys.npy")), np.asarray(keys))
    return result


def per_query(ids: list[str], vectors: np.ndarray, queries: np.ndarray, relevant: list[set[str]]) -> np.ndarray:
    """[n_queries, 3]: nDCG@10, recall@10, MRR@10."""
    scores = queries @ vectors.T
    rows = []
    for row, rel in zip(scores, relevant):
        top = [ids[i] for i in np.argsort(-row)[:10]]
        mrr = next((1 / (k + 1) for k, pid in enumerate(top) if pid in rel), 0.0)
        rows.append((ndcg_at_10(top, rel), len(rel & set(top)) / len(rel), mrr))
    return np.asarray(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--show", type=int, default=0, help="print the embedded text of N passages")
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"unknown variants {sorted(unknown)}; choose from {VARIANTS}")

    evalset = load_ru_eval()
    if args.show:
        for prompt, text in naive_inputs("title+parents", evalset)[: args.show]:
            print(repr((prompt + text)[:200]))
    from nodes.embedding.embedder import get_embedder

    embedder = get_embedder()
    ids = [p.id for p in evalset.passages]
    relevant = [set(q.relevant_ids) for q in evalset.queries]
    queries = embedder.embed_queries([q.text for q in evalset.queries])
    results = {v: per_query(ids, embed_variant(v, evalset, embedder), queries, relevant) for v in variants}
    kinds = np.array([q.kind == "question" for q in evalset.queries])
    print(f"\n{len(evalset.queries)} queries ({kinds.sum()} questions), {len(ids)} passages")
    print(f"{'variant':16} nDCG@10  recall@10  MRR@10  nDCG(questions)  p vs plain")
    for variant, rows in results.items():
        p = ""
        if "plain" in results and variant != "plain" and not variant.startswith("late"):
            from scipy.stats import wilcoxon

            if not np.allclose(rows[:, 0], results["plain"][:, 0]):
                p = f"{wilcoxon(rows[:, 0], results['plain'][:, 0]).pvalue:.3f}"
        if "late" in results and variant == "late+title":
            from scipy.stats import wilcoxon

            p = f"{wilcoxon(rows[:, 0], results['late'][:, 0]).pvalue:.3f} (vs late)"
        mean = rows.mean(axis=0)
        print(f"{variant:16} {mean[0]:7.3f}  {mean[1]:9.3f}  {mean[2]:6.3f}  "
              f"{rows[kinds, 0].mean():15.3f}  {p}")


if __name__ == "__main__":
    main()
