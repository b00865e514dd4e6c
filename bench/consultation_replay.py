"""Consultation replay with the offline model (issue 37, record 8): seed 000 ex. 1–4 and seed 002 ex. 1–3
through the Telegram stand-in, judged by the frozen rule of `bench/sets/consultation_replay_ru.json`.

Run: .venv/bin/python -m bench.consultation_replay [--only 000-4,r8-router]

What runs is what `grove up` runs with `GROVE_DOMAIN_PROFILE=berries` and no API key: the real bot
(python-telegram-bot) against the Bot API stand-in, the dispatcher, the consultation flow, a temporary
embedded Postgres and Prefect server, EmbeddingGemma, and the packaged Qwen model on llama-cpp-python's
server. The shared library is the berry library of `tests/fixtures/berries/library.yaml`. Each
conversation is one fresh user who chooses «Чат» and writes the seed's messages one by one.

Two settings differ from a default install, and are printed: answers are not streamed
(`GROVE_STREAM_ANSWERS=false`: one message per reply, so the reply read is the final one), and the
turn's deadline is 600 s (the 300 s default measures the machine's load, not the answer; a reply
cut by a deadline would count as not usable anyway).

Printed: every reply with its seconds, each final answer's verdict by the rule with the reason, usable
x/N per example and overall, the record-8 checks, the CPU (`bench.cpu.describe_cpu`) and `uptime`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

RULE = Path(__file__).resolve().parent / "sets" / "consultation_replay_ru.json"
SOURCES = "Информация взята из:"


def _fold(text: str) -> str:
    return text.casefold().replace("ё", "е")


def cyrillic_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    return sum("а" <= c.lower() <= "я" or c.lower() == "ё" for c in letters) / len(letters) if letters else 0.0


def judge(turn: dict[str, Any], reply: str, previous: str | None, kind: str | None) -> tuple[bool, str]:
    """The frozen rule for one final answer: (usable, why not)."""
    from grove.core.domain_profile import load_profile
    from nodes.answering.dialogue_guards import similarity

    profile = load_profile("berries")
    body, _, block = reply.partition(SOURCES)
    folded = _fold(body)
    if kind is not None and kind != "answer":
        return False, f"not a final answer ({kind})"
    if "сервис ответов недоступен" in folded:
        return False, "apology"
    if cyrillic_share(body) < 0.6:
        return False, "not Russian"
    facts = turn["facts"] + (turn.get("honest", []) if turn.get("honest_ok") else [])
    if not any(_fold(f) in folded for f in facts):
        return False, "no key fact"
    others = [name for name in profile.crops_named(body) if name != turn["crop"]]
    if others:
        return False, f"names another crop: {', '.join(others)}"
    if block and turn.get("honest_ok"):
        return False, "a source block for a crop the library has no document of"
    if block and [name for name in profile.crops_named(block) if name != turn["crop"]]:
        return False, "another crop's document as the source"
    if previous is not None and similarity(reply, previous) >= 0.85:
        return False, "repeats the previous reply"
    return True, ""


def expect(check: dict[str, Any], reply: str) -> tuple[bool, str]:
    """Record 8's checks, as `expect` in the rule file says."""
    from grove.core.domain_profile import load_profile

    profile = load_profile("berries")
    if check["id"] == "r8-router":
        return reply == profile.off_domain_reply, "the profile's refusal" if reply == profile.off_domain_reply \
            else "not the refusal"
    ok = "?" in reply and SOURCES not in reply and not profile.crops_named(reply.split("?")[0].split(":")[0])
    return ok, "asks the crop" if ok else "does not ask the crop"


async def converse(standin: Any, user_id: int, messages: list[str], log: list[str]) -> list[tuple[str, float]]:
    from tests.support.bot import choose_chat

    await choose_chat(standin, user_id)
    replies = []
    for message in messages:
        before = len(standin.bot_messages(user_id))
        started = time.perf_counter()
        standin.send_text(user_id, message)
        got = await standin.wait_for_bot_messages_async(user_id, before + 1, timeout=900)
        await asyncio.sleep(0.5)  # a reply in two messages (rare) arrives together
        text = "\n".join(m["text"] for m in standin.bot_messages(user_id)[before:]) or got[-1]["text"]
        seconds = time.perf_counter() - started
        replies.append((text, seconds))
        log.append(f"  user: {message}\n  bot ({seconds:.0f} s): {text}")
        print(log[-1], flush=True)
    return replies


def kinds_of(url: str, user_id: int) -> list[str]:
    import psycopg

    with psycopg.connect(url) as conn:
        return [k for (k,) in conn.execute("select meta->>'kind' from dialogue_turns where user_id = %s"
                                           " and flow = 'consultation' order by id", (user_id,))]


async def replay(url: str, only: set[str]) -> None:
    from tests.support.bot import new_bot, running
    from tests.support.telegram_standin import TelegramStandin

    rule = json.loads(RULE.read_text(encoding="utf-8"))
    results: dict[str, list[tuple[bool, str]]] = {}
    checks: list[tuple[str, bool, str]] = []
    seconds: list[float] = []
    log: list[str] = []
    with TelegramStandin() as standin:
        os.environ.update(TELEGRAM_BOT_TOKEN="123456:TEST-TOKEN", GROVE_TELEGRAM_API_URL=standin.api_url)
        from grove.core.settings import reset_settings

        reset_settings()
        async with running(new_bot()):
            for n, conversation in enumerate(rule["conversations"] + rule["record_8"], start=1):
                if only and conversation["id"] not in only:
                    continue
                user_id = 7_100_000 + n
                print(f"\n{conversation['id']}", flush=True)
                turns = conversation["turns"]
                replies = await converse(standin, user_id, [t["say"] for t in turns], log)
                seconds += [s for _, s in replies]
                kinds = kinds_of(url, user_id)
                previous: str | None = None
                for i, (turn, (reply, _)) in enumerate(zip(turns, replies, strict=True)):
                    if turn.get("final"):
                        verdict = judge(turn, reply, previous, kinds[i] if i < len(kinds) else None)
                        results.setdefault(conversation["id"], []).append(verdict)
                        print(f"  → {'usable' if verdict[0] else 'NOT usable: ' + verdict[1]}", flush=True)
                    if "expect" in turn:
                        ok, why = expect(conversation, reply)
                        checks.append((conversation["id"], ok, why))
                        print(f"  → {'as expected' if ok else 'NOT as expected'}: {why}", flush=True)
                    previous = reply
    report(results, checks, seconds)


def report(results: dict[str, list[tuple[bool, str]]], checks: list[tuple[str, bool, str]],
           seconds: list[float]) -> None:
    import statistics

    from bench.cpu import describe_cpu

    print("\n| example | usable | why not |\n|---|---|---|")
    usable = total = 0
    for name, verdicts in results.items():
        good = sum(ok for ok, _ in verdicts)
        usable, total = usable + good, total + len(verdicts)
        print(f"| {name} | {good}/{len(verdicts)} | {'; '.join(why for ok, why in verdicts if not ok) or '—'} |")
    if total:
        print(f"| **all** | **{usable}/{total} = {100 * usable / total:.0f} %** | target ≥ 80 % |")
    for name, ok, why in checks:
        print(f"record 8 {name}: {'as expected' if ok else 'NOT as expected'} ({why})")
    if seconds:
        print(f"seconds per reply: median {statistics.median(seconds):.0f}, max {max(seconds):.0f} "
              f"({len(seconds)} replies)")
    print(describe_cpu())
    print("uptime:", uptime())


def uptime() -> str:
    return subprocess.run(["uptime"], check=False, capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated conversation ids")
    args = parser.parse_args()
    from bench.cpu import describe_cpu

    print(describe_cpu())
    print("uptime:", uptime(), flush=True)

    from bench.support import temporary_store
    from grove.core.settings import get_settings, reset_settings
    from grove.infra.llm_server import LocalLLMServer
    from grove.infra.prefect_server import PrefectServer
    from tests.support.ports import free_port
    from tests.support.berries import store_berry_library

    for name in ("GROVE_LLM_API_KEY", "GROVE_LLM_BASE_URL", "OPENAI_API_KEY"):
        os.environ.pop(name, None)
    work = Path(tempfile.mkdtemp(prefix="grove-bench-replay-"))
    prefect = PrefectServer(home=work / "prefect", port=free_port())
    prefect.start(timeout=120)
    os.environ["PREFECT_API_URL"] = prefect.api_url
    settings = get_settings()
    server = LocalLLMServer(model_path=Path(settings.model_path(settings.local_llm_model)), port=free_port(),
                            log_file=work / "llm.log")
    try:
        os.environ.update(GROVE_LOCAL_LLM_URL=server.start(), GROVE_DOMAIN_PROFILE="berries",
                          GROVE_STREAM_ANSWERS="false", GROVE_TURN_DEADLINE="600", GROVE_ADMIN_IDS="[]")
        reset_settings()
        print(f"model: {settings.local_llm_model}; streaming off; turn deadline 600 s", flush=True)
        with temporary_store() as url:
            store_berry_library()
            asyncio.run(replay(url, {i for i in args.only.split(",") if i}))
    finally:
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=10)
        server.stop()
        prefect.stop()
        print(f"the local model's log: {work / 'llm.log'}")


if __name__ == "__main__":
    main()
