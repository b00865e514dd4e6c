"""Chunker throughput on ~1 MB of generated Russian text (median of 5 runs).

Run: .venv/bin/python -m bench.chunking_speed
"""

from __future__ import annotations

import statistics
import time

from chunking import chunk_text, split_sentences
from tests.chunking.texts import generate_text


def main() -> None:
    parts, size, seed = [], 0, 0
    while size < 1_000_000:
        part = generate_text(seed, paragraphs=20)
        parts.append(part)
        size += len(part.encode("utf-8"))
        seed += 1
    text = "\n\n".join(parts)
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        chunks = chunk_text(text)
        runs.append(time.perf_counter() - started)
    print(f"chunk_text: {size / 1e6:.2f} MB, {len(chunks)} chunks, median {statistics.median(runs):.3f} s")
    worst = "3.5 т. е. " * 20_000
    started = time.perf_counter()
    split_sentences(worst)
    print(f"split_sentences, boundary-free 200k chars: {time.perf_counter() - started:.3f} s")


if __name__ == "__main__":
    main()
