"""The answer prompt's order serves the local server's prefix cache (bench/prefix_reuse.py).

What every request of a deployment shares — role and rules — must come first, so two users' turns
share it token for token; what a regeneration adds (the repetition signal) must come after the
facts, so the second call of a turn re-reads only the signals and the conversation.
"""

from __future__ import annotations

from grove.core.settings import get_settings
import os

from nodes.answering.chat_prompt import local_messages
from nodes.store.chat_history import ChatMessage
from nodes.answering.consultation_prompt import system_prompt
from grove.core.domain_profile import load_profile
from nodes.retrieval.retrieve import Fragment
from nodes.answering.turn_policy import prepare_turn, with_repetition_signal
from nodes.retrieval.unified_retrieve import Snippet


def shared(a: str, b: str) -> str:
    return os.path.commonprefix([a, b])  # noqa: RUF071 - the character prefix is what is meant


def snippet(text: str) -> Snippet:
    return Snippet(source_type="document", priority_level=2, content=text, distance=0.2, id=1,
                   source_identifier="справочник.pdf")


def consultation(culture: str, question: str, facts: str, history: list[ChatMessage], repeat: bool = False) -> str:
    profile = load_profile("berries")
    policy = prepare_turn(question, history, get_settings())
    if repeat:
        policy = with_repetition_signal(policy)
    return system_prompt(profile, culture, profile.category, "grounded", [snippet(facts)], policy.signals,
                         policy.recent_bot, style="short")


def test_two_users_consultations_share_role_and_rules() -> None:
    first = consultation("голубика", "Когда поливать голубику?", "Голубику поливают кислой водой.", [])
    second = consultation("малина летняя", "Как обрезать малину?", "Малину обрезают весной.",
                          [ChatMessage(role="user", content="Привет"), ChatMessage(role="assistant", content="Здравствуйте")])
    common = shared(first, second)
    rules_end = first.index("Правила:")
    assert first.index("Текущая культура") > rules_end  # the user's situation after the rules
    assert "Правила:" in common and common.count("\n- ") >= 2  # the whole rule list is shared
    assert "голубика" not in common and "малина" not in common


def test_a_regeneration_rereads_only_what_follows_the_facts() -> None:
    facts = "Голубику поливают кислой водой раз в неделю."
    first = consultation("голубика", "Когда поливать голубику?", facts, [])
    again = consultation("голубика", "Когда поливать голубику?", facts, [], repeat=True)
    assert first != again
    assert facts in shared(first, again)


def test_two_users_chat_turns_share_role_and_rules() -> None:
    def turn(user: int, question: str, text: str) -> str:
        fragment = Fragment(chunk_id=user, document_id=user, text=text, source_type="pdf",
                            source_identifier=f"user{user}.pdf", page=1, distance=0.3)
        messages, _ = local_messages(question, [], prepare_turn(question, [], get_settings()), [fragment],
                                         get_settings())
        return messages[0]["content"]

    first = turn(1, "Что в договоре про сроки?", "Срок поставки — десять дней.")
    second = turn(2, "Как настроить роутер?", "Роутер настраивают через веб-интерфейс.")
    common = shared(first, second)
    assert common.startswith("Ты — ") and "Правила:" in common
    assert "Срок" not in common and "Роутер" not in common
    assert first.index("Срок поставки") > first.index("Правила:")
