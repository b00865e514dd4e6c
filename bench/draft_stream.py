"""What a user sees first while the local model answers: Telegram's draft against the edited message.

Run: `.venv/bin/python -m bench.draft_stream [--questions 5]`

One process: a fresh embedded Postgres, the Bot API stand-in, the real bot (python-telegram-bot,
long polling) and the real chat flow with the real embedding model; the local model is a scripted
OpenAI-compatible server that reads the prompt for 3 s and then writes ten words a second, so the
figures are grove's own, not the model's. A short note is stored in the user's base, so the
answer's passage is found and shown before the model writes.

Each question is asked in a private chat twice, side by side: with `GROVE_STREAM_DRAFTS=true`
(Telegram's own draft, `sendMessageDraft`) and `false` (one message, edited). Printed, medians
over the questions: time from the question to the first thing on screen (the draft's placeholder,
or the first message), to the first passage on screen, to the final answer; Bot API calls per
answer (drafts, messages sent, edits). Then, per mode, a long answer is stopped once its first
words are on screen (Telegram's own stop on the draft, or the «Стоп» button under the message):
seconds from the press to the model's stream hung up (the scripted server sees its client go) and
to the stopped reply on screen. No Prefect server: the turn's record is not what is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import Any

FACT = "Ремонтантную малину весной подкармливают азотом: 15 г мочевины на квадратный метр."
ANSWER = ("Весной ремонтантную малину подкармливают азотом — около пятнадцати граммов мочевины на "
          "квадратный метр, по влажной почве, до начала роста побегов [1].")


def seconds_to(calls: list[dict[str, Any]], since: float, test: Any) -> float:
    """Seconds from `since` (wall clock) to the first call that `test` accepts."""
    return next((c["time"] - since for c in calls if c["time"] >= since and test(c)), float("nan"))


async def ask(standin: Any, user_id: int, question: str) -> dict[str, float]:
    before_calls = len(standin.calls())
    before = len(standin.bot_messages(user_id))
    asked = time.time()
    standin.send_text(user_id, question)
    await standin.wait_for_bot_messages_async(user_id, before + 1, timeout=300)
    while standin.bot_messages(user_id)[before]["text"].endswith(" …"):  # an edited draft: to the end
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    calls = [c for c in standin.calls()[before_calls:] if c["response"].get("ok")]
    shows = [c for c in calls if c["method"] in ("sendMessageDraft", "sendMessage", "editMessageText")]
    final = max(c["time"] for c in shows)
    return {
        "first": seconds_to(shows, asked, lambda c: True),
        "passage": seconds_to(shows, asked, lambda c: "15 г мочевины" in (c["params"].get("text") or "")),
        "final": final - asked,
        "drafts": sum(c["method"] == "sendMessageDraft" for c in calls),
        "sent": sum(c["method"] == "sendMessage" for c in calls),
        "edits": sum(c["method"] == "editMessageText" for c in calls),
    }


async def stop(standin: Any, llm: Any, user_id: int, native: bool) -> dict[str, float]:
    """A long answer stopped once its first words are on screen; seconds from the press."""
    from flows.texts import ANSWER_STOPPED
    from tests.support.scripted_llm import slow, text, trickle

    llm.script(slow(3.0, trickle(0.1, text(" ".join([ANSWER] * 10)))))
    before, before_calls, hung_up = len(standin.bot_messages(user_id)), len(standin.calls()), len(llm.abandoned_at)
    standin.send_text(user_id, "Чем подкормить ремонтантную малину весной?")
    while not any("Весной ремонтантную" in (c["params"].get("text") or "") for c in standin.calls()[before_calls:]):
        await asyncio.sleep(0.02)
    pressed = time.time()
    if native:
        standin.stop_draft(user_id)
    else:
        draft = standin.bot_messages(user_id)[before]
        standin.press_button(user_id, draft["reply_markup"]["inline_keyboard"][0][0]["callback_data"],
                             message_id=draft["message_id"])
    while len(llm.abandoned_at) == hung_up:
        await asyncio.sleep(0.01)
    shown = float("nan")
    while shown != shown:  # nan until the stopped reply is on screen
        shown = seconds_to([c for c in standin.calls()[before_calls:] if c["response"].get("ok")], pressed,
                           lambda c: (c["params"].get("text") or "").startswith(ANSWER_STOPPED))
        await asyncio.sleep(0.01)
    return {"hung_up": llm.abandoned_at[hung_up] - pressed, "shown": shown}


async def run(questions: int) -> list[str]:
    from bench.cpu import describe_cpu
    from grove.core.settings import reset_settings
    from nodes.embedding.embedder import get_embedder
    from tests.support.bot import choose_chat, new_bot, running
    from tests.support.scripted_llm import ScriptedLLM, slow, text, trickle
    from tests.support.telegram_standin import TelegramStandin
    from tests.test_reply_stream import FACTS, store_facts

    assert FACT in FACTS
    lines = [describe_cpu()]
    results: dict[str, list[dict[str, float]]] = {"true": [], "false": []}
    stops: dict[str, list[dict[str, float]]] = {"true": [], "false": []}
    with TelegramStandin() as standin, ScriptedLLM(default=slow(3.0, trickle(0.1, text(ANSWER)))) as llm:
        os.environ.update(TELEGRAM_BOT_TOKEN="123456:TEST-TOKEN", GROVE_TELEGRAM_API_URL=standin.api_url,
                          GROVE_LOCAL_LLM_URL=llm.base_url, GROVE_LLM_RETRIES="0", GROVE_PLANNER="off",
                          GROVE_LOCAL_ANSWER_OPENING="0")
        get_embedder().embed_query("прогрев")  # loaded before the first question is timed
        for n in range(questions):
            for drafts in ("true", "false"):
                os.environ["GROVE_STREAM_DRAFTS"] = drafts
                reset_settings()
                user_id = 7_000_000 + n * 10 + (drafts == "true")
                store_facts(user_id)
                async with running(new_bot()):
                    await choose_chat(standin, user_id)
                    results[drafts].append(await ask(standin, user_id, "Чем подкормить ремонтантную малину весной?"))
                    stops[drafts].append(await stop(standin, llm, user_id, native=drafts == "true"))
    lines.append("| | Telegram's draft | the edited message |")
    lines.append("|---|---|---|")
    for key, label, unit in (("first", "first thing on screen", "s"), ("passage", "the passage on screen", "s"),
                             ("final", "the final answer", "s"), ("drafts", "sendMessageDraft calls", ""),
                             ("sent", "sendMessage calls", ""), ("edits", "editMessageText calls", "")):
        cells = [statistics.median(r[key] for r in results[mode]) for mode in ("true", "false")]
        lines.append(f"| {label} (median of {questions}) | " +
                     " | ".join(f"{c:.2f} {unit}".strip() if unit else f"{c:.0f}" for c in cells) + " |")
    for key, label in (("hung_up", "«Стоп» → the model's stream hung up"), ("shown", "«Стоп» → the stopped reply on screen")):
        cells = [statistics.median(r[key] for r in stops[mode]) for mode in ("true", "false")]
        lines.append(f"| {label} (median of {questions}) | " + " | ".join(f"{c:.2f} s" for c in cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=5)
    args = parser.parse_args()
    from bench.support import temporary_store

    with temporary_store():
        print("\n".join(asyncio.run(run(args.questions))))


if __name__ == "__main__":
    main()
