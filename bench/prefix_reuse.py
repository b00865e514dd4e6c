"""Prompt tokens the local model evaluates per request, with the answer template's fields in two orders.

Run: .venv/bin/python -m bench.prefix_reuse [--users 4] [--turns 3]

Why: on 2 cores the local model reads a prompt at about 70 tokens/s, so a 900-token request costs
13 s before its first word. llama-cpp-python keeps the previous request's tokens in its KV cache
and evaluates only what follows the longest common prefix with it (``Llama.generate``). A prompt
whose fixed part (role, rules) comes first is read once per deployment; one that puts per-user text
(the consultation's situation) before the rules is read again on every request from another user.

What is counted, without running the model: the real requests grove builds — consultation turns
(`nodes.answering.consultation_prompt.system_prompt` in the local model's style, with snippets, history and
a growing conversation) and local chat turns (`nodes.answering.chat_prompt.local_messages` with fragments) — for
``--users`` users whose turns interleave, plus the regeneration a repeated answer triggers (the
second call of a turn, with the repetition signal). Each request is rendered as ChatML (the local
model's template) and tokenised with the local model's vocabulary; evaluated = its tokens minus the
common prefix with the request before it. "before" is the template as it was (role, situation,
rules, …), "after" the current prompts/answer.md (role, rules, then the situation).
"""

from __future__ import annotations

from grove.core.settings import get_settings
import argparse
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import prompts
from nodes.answering.chat_prompt import local_messages
from nodes.answering.answer_prompt import TEMPLATE
from nodes.store.chat_history import ChatMessage
from nodes.answering.consultation_prompt import system_prompt
from grove.core.domain_profile import load_profile
from nodes.retrieval.retrieve import Fragment
from nodes.answering.token_budget import _vocabulary, tokenizer_path
from nodes.answering.turn_policy import prepare_turn, with_repetition_signal
from nodes.retrieval.unified_retrieve import Snippet

BEFORE = "Ты — {role}.\n{situation}\nПравила:\n{rules}- {mode_instruction}\n{turn_context}{retrieved_facts}"

CROPS = ["клубника ремонтантная", "малина летняя", "голубика", "смородина", "жимолость", "крыжовник"]
FACTS = [  # distinct passages: two users' fragments share no prefix, as real documents would not
    "Подкормку проводят весной после схода снега азотными удобрениями, летом — калийными.",
    "Полив нужен по утрам, не реже раза в неделю; в жару — через день.",
    "Мульча из хвои сохраняет влагу и подкисляет почву, что важно для этой культуры.",
    "Обрезку делают ранней весной, до распускания почек, удаляя старые и больные побеги.",
    "Укрытие на зиму нужно в регионах с морозами ниже двадцати пяти градусов.",
    "Урожай собирают в сухую погоду, ягоды хранят в прохладе не дольше трёх дней.",
]


def fact(owner: str, user: int, n: int) -> str:
    return f"{owner}: {FACTS[(user + n) % len(FACTS)]} Пункт {n}."


def chatml(messages: list[dict[str, Any]]) -> str:
    """Qwen's chat template: what the server tokenises."""
    body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return body + "<|im_start|>assistant\n"


def tokens(messages: list[dict[str, Any]]) -> list[int]:
    return list(_vocabulary(tokenizer_path()).tokenize(chatml(messages).encode("utf-8"), add_bos=False, special=True))


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@contextmanager
def template(text: str | None) -> Iterator[None]:
    """Render with ``text`` in place of prompts/answer.md (None: the current file)."""
    real = prompts.load

    def load(name: str) -> str:
        return text if name == TEMPLATE and text is not None else real(name)

    prompts.load = load  # type: ignore[assignment]
    try:
        yield
    finally:
        prompts.load = real  # type: ignore[assignment]


def consultation_requests(users: int, turns: int, regenerate: bool) -> list[list[dict[str, Any]]]:
    """Interleaved consultation turns of ``users`` users (each followed by a regeneration if asked)."""
    profile = load_profile("berries")
    histories: dict[int, list[ChatMessage]] = {u: [] for u in range(users)}
    requests = []
    for turn in range(turns):
        for user in range(users):
            crop = CROPS[user % len(CROPS)]
            question = f"Как подкармливать {crop} в {['мае', 'июне', 'июле'][turn % 3]}? Вопрос {turn}."
            snippets = [Snippet(source_type="document", priority_level=2, content=fact(crop, user, n),
                                distance=0.2, id=n, source_identifier="справочник.pdf") for n in range(3)]
            policy = prepare_turn(question, histories[user], get_settings())
            for step in (policy, with_repetition_signal(policy))[: 1 + regenerate]:
                system = system_prompt(profile, crop, profile.category, "grounded", snippets, step.signals,
                                       step.recent_bot, style="short")
                requests.append([{"role": "system", "content": system},
                                 *({"role": m.role, "content": m.content} for m in histories[user]),
                                 {"role": "user", "content": question}])
            histories[user] += [ChatMessage(role="user", content=question),
                                ChatMessage(role="assistant", content=f"Ответ про {crop}, ход {turn}.")]
    return requests


def chat_requests(users: int, turns: int, regenerate: bool) -> list[list[dict[str, Any]]]:
    """Interleaved local chat turns with fragments from each user's own documents."""
    histories: dict[int, list[ChatMessage]] = {u: [] for u in range(users)}
    requests = []
    for turn in range(turns):
        for user in range(users):
            question = f"Что сказано в моём документе про {['полив', 'обрезку', 'урожай'][turn % 3]}?"
            fragments = [Fragment(chunk_id=n, document_id=user, text=fact(f"документ {user}", user, n),
                                  source_type="pdf", source_identifier=f"user{user}.pdf", page=n + 1, distance=0.3)
                         for n in range(3)]
            policy = prepare_turn(question, histories[user], get_settings())
            for step in (policy, with_repetition_signal(policy))[: 1 + regenerate]:
                requests.append(local_messages(question, histories[user], step, fragments, get_settings())[0])
            histories[user] += [ChatMessage(role="user", content=question),
                                ChatMessage(role="assistant", content=f"Ответ {turn}.")]
    return requests


def evaluated(requests: list[list[dict[str, Any]]]) -> tuple[list[int], list[int]]:
    """Per request: all its tokens, and those evaluated after the previous request's prefix."""
    totals, fresh, previous = [], [], []
    for messages in requests:
        current = tokens(messages)
        totals.append(len(current))
        fresh.append(len(current) - common_prefix(previous, current))
        previous = current
    return totals, fresh


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.users} users, {args.turns} turns each, interleaved; tokens per request (median) and in all")
    print(f"{'requests':20} {'layout':7} {'prompt':>7} {'evaluated':>10} {'in all':>7} {'evaluated':>10} {'saved':>6}")
    for kind, build in (("consultation", consultation_requests), ("chat (local)", chat_requests)):
        for regenerate in (False, True):
            for layout, text in (("before", BEFORE), ("after", None)):
                with template(text):
                    totals, fresh = evaluated(build(args.users, args.turns, regenerate))
                label = kind + (" +regen" if regenerate else "")
                print(f"{label:20} {layout:7} {statistics.median(totals):7.0f} {statistics.median(fresh):10.0f} "
                      f"{sum(totals):7d} {sum(fresh):10d} {1 - sum(fresh) / sum(totals):6.0%}")


if __name__ == "__main__":
    main()
