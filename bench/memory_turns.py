"""Memory over many consultation turns: does the bot process grow, and with what?

Run: .venv/bin/python -m bench.memory_turns [--turns 100] [--malloc default|arena2]

The real consultation flow, in this process, with a temporary embedded Postgres and Prefect
server, a small berry library embedded by EmbeddingGemma (the real embedder: one query vector
per turn), and a scripted OpenAI-compatible model (the local model's own memory is another
process). Users ask questions of varied length, so the embedder sees many input shapes, as it
does in use. Printed: the process's resident memory (VmRSS) after the library, after turn 10
and every 10 turns to the last, and the growth from turn 10 to the last (target: within 10 %).

`--malloc arena2` re-runs this bench in a child with `MALLOC_ARENA_MAX=2` (glibc's per-thread
arenas are a known source of growth for PyTorch CPU inference with changing shapes), so the
two can be compared side by side.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIBRARY = {
    "малина ремонтантная": "Ремонтантную малину весной подкармливают азотом: 15 г мочевины на квадратный метр. "
                           "Осенью все побеги срезают под корень.",
    "малина общая": "Болезни малины: пурпуровая пятнистость, антракноз; больные побеги вырезают и сжигают.",
    "клубника летняя": "Летнюю клубнику обрезают после сбора урожая: скашивают старые листья и усы.",
    "голубика": "Голубике нужна кислая почва с pH 4–5 и мульча из хвои; поливают часто, понемногу.",
    "смородина": "Смородину обрезают ранней весной, удаляя ветви старше пяти лет.",
}
QUESTIONS = [
    "Как подкормить малину ремонтантную весной?",
    "Какие болезни бывают у малины ремонтантной и как с ними бороться, если листья покрылись пятнами?",
    "Когда обрезать летнюю клубнику?",
    "Какая почва нужна голубике?",
    "Как обрезать смородину?",
    "А если кусту смородины уже десять лет и он почти не плодоносит, стоит ли его омолаживать "
    "или лучше заменить новым саженцем?",
]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def consultant(body: dict) -> object:
    from tests.support.scripted_llm import text

    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if system.startswith("Определи культуру"):
        from grove.core.domain_profile import load_profile

        return text(load_profile("berries").keyword_culture(user))(body)
    return text(f"Ответ на вопрос «{user[:60]}»: смотрите фрагмент [1].")(body)


def run(turns: int) -> None:
    from bench.support import temporary_store
    from grove.infra.prefect_server import PrefectServer
    from tests.support.ports import free_port
    from tests.support.scripted_llm import ScriptedLLM

    work = Path(tempfile.mkdtemp(prefix="grove-bench-memory-"))
    prefect = PrefectServer(home=work / "prefect", port=free_port())
    prefect.start(timeout=120)
    os.environ["PREFECT_API_URL"] = prefect.api_url
    try:
        with temporary_store(), ScriptedLLM(default=consultant) as llm:
            os.environ.update(GROVE_LLM_API_KEY="bench", GROVE_LLM_BASE_URL=llm.base_url,
                              GROVE_LLM_MODEL="scripted", GROVE_DOMAIN_PROFILE="berries")
            from grove.core.settings import reset_settings

            reset_settings()
            measure(turns)
    finally:
        prefect.stop()
        shutil.rmtree(work, ignore_errors=True)


def measure(turns: int) -> None:
    from flows.consultation import consultation
    from nodes.store.document_store import ChunkRecord, store_document
    from nodes.embedding.embedder import get_embedder
    from grove.core.ingest_types import ExtractedDocument
    from nodes.retrieval.unified_retrieve import LIBRARY_OWNER

    started = rss_mb()
    for culture, body in LIBRARY.items():
        vectors = get_embedder().embed_documents([body])
        document = ExtractedDocument(source_type="pdf", source_identifier=f"{culture}.pdf", title=None, text=body)
        store_document.fn(LIBRARY_OWNER, document, [ChunkRecord(position=0, text=body, page=1)], vectors, culture)
    print(f"start {started:.0f} MB; after the library {rss_mb():.0f} MB", flush=True)
    marks: dict[int, float] = {}
    began = time.perf_counter()
    for turn in range(1, turns + 1):
        user = 9_100_000 + turn % 7  # a few users, each with a growing history and topics
        question = QUESTIONS[turn % len(QUESTIONS)] + (" Подробнее, пожалуйста." * (turn % 4))
        consultation(question, user, f"bench-{user}")
        if turn % 10 == 0:
            marks[turn] = rss_mb()
            print(f"turn {turn}: {marks[turn]:.0f} MB ({(time.perf_counter() - began) / turn:.2f} s/turn)",
                  flush=True)
    if 10 in marks and turns in marks:
        growth = marks[turns] / marks[10] - 1
        print(f"\nRSS after turn 10: {marks[10]:.0f} MB; after turn {turns}: {marks[turns]:.0f} MB; "
              f"growth {growth:+.1%} (target within ±10 %)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--malloc", choices=("default", "arena2"), default="default")
    args = parser.parse_args()
    if args.malloc == "arena2" and os.environ.get("MALLOC_ARENA_MAX") != "2":
        env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
        raise SystemExit(subprocess.call([sys.executable, "-m", "bench.memory_turns", "--turns", str(args.turns),
                                          "--malloc", "arena2"], env=env))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    print(f"MALLOC_ARENA_MAX={os.environ.get('MALLOC_ARENA_MAX', 'unset')}, {args.turns} turns", flush=True)
    run(args.turns)


if __name__ == "__main__":
    main()
