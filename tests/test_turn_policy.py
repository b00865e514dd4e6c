"""One turn's blackboard (nodes/answering/turn_policy.py): signals and guards from the message and the history."""

from __future__ import annotations

from grove.core.settings import get_settings
from nodes.store.chat_history import NO_ANSWER_MARK, ChatMessage
from nodes.answering.context_signals import Signal
from nodes.answering.turn_policy import TurnPolicy, needs_regeneration, prepare_turn, with_repetition_signal

PRUNING = "Малину обрезают осенью, сразу после плодоношения [1]."
SOURCES = "\n\nИнформация взята из:\n• pdf: малина.pdf, с. 3"


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def bot(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


def test_a_first_message_gets_the_detectors_signals_and_no_guard() -> None:
    policy = prepare_turn("Здравствуйте! Что в файле отчёт.pdf?", [], get_settings())
    assert policy.signal_names == ["greeting", "asks_document"]
    assert policy.signals[1].detail == "file name, phrase «в файле»"
    assert policy.guards == [] and policy.recent_bot == []


def test_extra_signals_come_first_then_detectors_then_guards() -> None:
    history = [user("Когда обрезать малину?"), bot(PRUNING)]
    policy = prepare_turn("Привет! Когда обрезать малину?", history, get_settings(), extra=[Signal(name="followup", detail="малина")])
    assert policy.signal_names == ["followup", "greeting", "user_repeats", "change_tack"]
    assert policy.signals[0].detail == "малина" and policy.guards == ["conversation"]


def test_recent_replies_lose_their_source_block_and_failed_answers() -> None:
    history = [user("Когда обрезать малину?"), bot(PRUNING + SOURCES),
               user("А голубику?"), bot(NO_ANSWER_MARK)]
    assert prepare_turn("Чем подкормить голубику?", history, get_settings()).recent_bot == [PRUNING]


def test_only_the_newest_replies_are_kept(env) -> None:  # type: ignore[no-untyped-def]
    history = [m for n in range(5) for m in (user(f"Вопрос {n} о поливе?"), bot(f"Поливайте {n} раз в неделю."))]
    assert prepare_turn("Что ещё?", history, get_settings()).recent_bot == [f"Поливайте {n} раз в неделю." for n in (2, 3, 4)]
    env(GROVE_DO_NOT_REPEAT_COUNT="1")
    assert prepare_turn("Что ещё?", history, get_settings()).recent_bot == ["Поливайте 4 раз в неделю."]


def test_a_question_repeated_within_the_last_five_is_noticed() -> None:
    others = ["Чем подкормить голубику?", "Как укрыть ежевику на зиму?", "Когда сажать смородину?",
              "Какую почву любит жимолость?", "Сколько воды нужно крыжовнику?"]
    asked_again = [user("Когда обрезать малину?"), *map(user, others[:4])]
    assert "user_repeats" in prepare_turn("Когда обрезать малину?", asked_again, get_settings()).signal_names
    asked_long_ago = [user("Когда обрезать малину?"), *map(user, others)]
    assert prepare_turn("Когда обрезать малину?", asked_long_ago, get_settings()).guards == []


def test_the_same_reply_under_different_sources_is_the_bot_repeating() -> None:
    history = [user("Когда обрезать малину?"), bot(PRUNING + SOURCES),
               user("А точнее?"), bot(PRUNING + "\n\nИнформация взята из:\n• pdf: сад.pdf, с. 12")]
    policy = prepare_turn("Спасибо, а голубику?", history, get_settings())
    assert policy.signal_names == ["bot_repeats", "change_tack"] and policy.recent_bot == [PRUNING, PRUNING]


def test_a_draft_close_to_a_recent_reply_is_regenerated_once() -> None:
    policy = prepare_turn("А голубику?", [user("Когда обрезать малину?"), bot(PRUNING + SOURCES)], get_settings())
    copy = "Малину обрезают осенью — сразу после плодоношения [1]!"
    assert needs_regeneration(copy, policy)
    assert not needs_regeneration("Голубику обрезают весной, до распускания почек.", policy)
    assert not needs_regeneration("", policy)
    again = with_repetition_signal(policy)
    assert not needs_regeneration(copy, again)  # the second draft is shown whatever it says


def test_the_repetition_signal_is_added_to_a_copy() -> None:
    policy = TurnPolicy(signals=[Signal(name="greeting")], guards=["conversation"], recent_bot=[PRUNING])
    again = with_repetition_signal(policy)
    assert again.signal_names == ["greeting", "repetition"]
    assert again.guards == ["conversation", "anti_repetition"] and again.recent_bot == [PRUNING]
    assert policy.signal_names == ["greeting"] and policy.guards == ["conversation"]  # the first is unchanged
