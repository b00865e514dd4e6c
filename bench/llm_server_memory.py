"""Memory of the local model's server over many turns: does llama.cpp's process grow with use?

Run: .venv/bin/python -m bench.llm_server_memory [--turns 100] [--max-tokens 48]

bench/memory_turns.py showed grove's own process flat over 100 consultation turns; the growth
seen in use (2.5 → 5.5 GB for the whole machine over ~30 turns) also counts the local model's
server, a separate process. Here that server is started as `grove up` starts it (the packaged
Qwen2.5-Coder-1.5B, n_ctx 4096, 2 threads) and asked `--turns` chat requests through grove's own
client (`nodes.answering.llm.complete`, streamed as every local plain answer is), each a fixed rule block
and a different set of 2 to 40 passages (the project's Russian question sets' questions and
needles: prompts of a few hundred to a few thousand characters, no two alike, so the prefix
cache reuses only the rules). Printed: the server's resident memory (VmRSS of its process tree)
after start, after turns 1, 10, and every 10 to the last, and the growth from turn 10 to the
last (target: within 10 %).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

from bench.eval_stores import SETS_DIR

RULES = ("Ты — помощник по документам пользователя. Отвечай по-русски, коротко и только по фрагментам "
         "ниже; если в них нет ответа, так и скажи. Ссылайся на фрагменты номерами в квадратных скобках.")


def passages() -> list[str]:
    """Russian sentences no one in the project wrote the answers to: the sets' questions and needles."""
    found: list[str] = []
    for path in sorted(SETS_DIR.glob("*_ru.json")):
        for item in json.loads(path.read_text())["questions"]:
            found.append(item["question"])
            found += item.get("needles", [])
    return found


def rss_mb(pid: int) -> float:
    import psutil

    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--max-tokens", type=int, default=48, help="answer length (memory does not depend on it)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    from grove.infra.llm_server import LocalLLMServer
    from grove.core.settings import get_settings, reset_settings
    from tests.support.ports import free_port

    settings = get_settings()
    work = Path(tempfile.mkdtemp(prefix="grove-llm-memory-"))
    server = LocalLLMServer(model_path=Path(settings.model_path(settings.local_llm_model)), port=free_port(),
                            log_file=work / "llm.log")
    url = server.start()
    os.environ.update({"GROVE_LOCAL_LLM_URL": url, "GROVE_LLM_RETRIES": "0", "GROVE_LLM_TIMEOUT": "600"})
    for key in ("GROVE_LLM_API_KEY", "OPENROUTER_API_KEY"):
        os.environ.pop(key, None)
    reset_settings()
    from nodes.answering.llm import ChatModel, complete

    pid = server.child.process.pid
    texts, rng = passages(), random.Random(args.seed)
    print(f"server pid {pid}; RSS after start: {rss_mb(pid):,.0f} MB", flush=True)
    readings: dict[int, float] = {}
    started = time.perf_counter()
    try:
        for turn in range(1, args.turns + 1):
            count = rng.choice([2, 5, 10, 20, 40])
            fragments = "\n".join(f"[{n}] «{t}»" for n, t in enumerate(rng.sample(texts, count), 1))
            messages = [{"role": "system", "content": f"{RULES}\n\nФрагменты:\n{fragments}"},
                        {"role": "user", "content": rng.choice(texts)}]
            reply = complete(messages, ChatModel(get_settings()), max_tokens=args.max_tokens)
            if turn == 1 or turn % 10 == 0:
                readings[turn] = rss_mb(pid)
                print(f"turn {turn:>3}: RSS {readings[turn]:,.0f} MB (this prompt {len(messages[0]['content']):,} "
                      f"characters, answer {len(reply.content or '')}; {time.perf_counter() - started:.0f} s so far)",
                      flush=True)
    finally:
        server.stop()
    last = max(readings)
    if 10 in readings and last > 10:
        growth = (readings[last] - readings[10]) / readings[10]
        print(f"\ngrowth from turn 10 to turn {last}: {growth:+.1%} (target within 10 %)")


if __name__ == "__main__":
    main()
