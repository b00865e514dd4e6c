"""Ingestion throughput on this machine: PDF pages/s and chunks/s end to end, audio real-time factor,
peak memory. Medians of several runs, stage by stage.

Run: .venv/bin/python -m bench.ingest_throughput [--pages 40] [--runs 3]

End to end = parse → chunk → embed (late chunking, EmbeddingGemma) → store (one transaction),
the same node functions the ingest flow calls, without Prefect's per-task bookkeeping.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

from bench.support import temporary_store


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--audio-seconds", type=float, default=60.0)
    args = parser.parse_args()

    with temporary_store():
        run(args)


def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="grove-bench-"))

    from grove.core.settings import get_settings
    from nodes.ingestion.chunk_document import chunk
    from nodes.store.document_store import store_document
    from nodes.embedding.embedder import get_embedder
    from nodes.ingestion.parse_files import parse_file
    from tests.support.documents import make_pdf

    sentence = ("Ремонтантная малина плодоносит на побегах текущего года, поэтому осенью её срезают "
                "под корень, а весной подкармливают азотом. ")
    embedder = get_embedder()
    embedder.embed_documents(["прогрев модели"])
    stages: dict[str, list[float]] = {"parse": [], "chunk": [], "embed": [], "store": [], "total": []}
    chunk_counts = []
    for run in range(args.runs):
        pages = [f"Страница {n}, прогон {run}. " + sentence * 14 for n in range(1, args.pages + 1)]
        pdf = make_pdf(pages, work / f"bench-{run}.pdf")
        t0 = time.perf_counter()
        document = parse_file(str(pdf), pdf.name, "application/pdf", get_settings())
        t1 = time.perf_counter()
        chunked = chunk(document, get_settings())
        t2 = time.perf_counter()
        vectors = embedder.embed_chunks(chunked.text, chunked.chunks)
        t3 = time.perf_counter()
        store_document.fn(run + 1, document, chunked.records, vectors)
        t4 = time.perf_counter()
        for key, value in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0)):
            stages[key].append(value)
        chunk_counts.append(len(chunked.chunks))
    total = _median(stages["total"])
    chunks = _median(chunk_counts)
    print(f"PDF, {args.pages} pages of ~{len(pages[0])} chars, {chunks:.0f} chunks, median of {args.runs}:")
    for key, values in stages.items():
        print(f"  {key:6} {_median(values):7.2f} s")
    print(f"  end to end: {args.pages / total:.2f} pages/s, {chunks / total:.2f} chunks/s")
    print(f"  parse only: {args.pages / _median(stages['parse']):.1f} pages/s")

    from tests.support.speech import festival_missing, speak, write_audio

    if reason := festival_missing():
        print(f"audio: skipped ({reason})")
    else:
        from nodes.ingestion.transcribe import transcribe_media

        phrase = speak("Клубнику поливают утром тёплой водой, а ягоды собирают каждые два дня.", work, "p")
        import numpy as np

        repeats = max(1, int(args.audio_seconds * 16000 / len(phrase)))
        audio = write_audio(work / "speech.ogg", [phrase] * repeats)
        rtfs = []
        for _ in range(args.runs):
            started = time.perf_counter()
            document = transcribe_media(str(audio), source_type="voice", source_identifier="speech.ogg")
            rtfs.append((time.perf_counter() - started) / (document.duration_seconds or 1))
        print(f"audio: {document.duration_seconds:.0f} s of speech, real-time factor median {_median(rtfs):.3f}"
              f" (faster than real time when < 1)")
        del np
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (RSS) of this process: {peak:.0f} MB")


if __name__ == "__main__":
    main()
