"""The one answer pipeline: fit, the regeneration rule, check and compose — the same for a chat
fragment and a consultation snippet."""

from __future__ import annotations

from grove.core.settings import get_settings
from typing import Any

from nodes.answering import answer_pipeline as pipeline
from nodes.store.chat_history import ChatMessage
from nodes.answering.context_window import MIN_FRAGMENT_TOKENS, prompt_room
from nodes.answering.llm import LLMReply
from nodes.retrieval.retrieve import Fragment
from nodes.retrieval.sources import HEADER, Citable
from nodes.answering.token_budget import count_tokens
from nodes.answering.turn_policy import TurnPolicy
from nodes.retrieval.unified_retrieve import Snippet


def fragment(n: int, text: str) -> Fragment:
    return Fragment(chunk_id=n, document_id=n, text=text, source_type="pdf", source_identifier=f"doc{n}.pdf",
                    page=n, distance=0.3)


def snippet(n: int, text: str) -> Snippet:
    return Snippet(source_type="document", priority_level=2, content=text, distance=0.3, id=n,
                   source_identifier=f"book{n}.pdf", page=n)


def pieces(make: Any) -> list[Citable]:
    return [make(1, "Малину поливают раз в неделю, по ведру воды на куст."),
            make(2, "Подкормку азотом дают весной, калием — после сбора урожая."),
            make(3, "Ремонтантную малину осенью скашивают под корень.")]


def test_a_fragment_and_a_snippet_are_the_same_citable_shape() -> None:
    for make in (fragment, snippet):
        piece = make(4, "Полив раз в неделю.")
        cut = piece.with_text("Полив")
        assert type(cut) is type(piece) and cut.text == "Полив" and piece.text == "Полив раз в неделю."
        assert cut.source_label() == piece.source_label() and "4.pdf" in piece.source_label()


def test_pieces_that_fit_are_shown_whole_in_rank_order() -> None:
    for make in (fragment, snippet):
        ranked = pieces(make)
        costs = [count_tokens(p.text) + 5 for p in ranked]
        shown, kept = pipeline.fit(100, costs, [], ranked, prompt_room(get_settings()))
        assert shown == ranked and kept == []
        shown, _ = pipeline.fit(100, costs, [], ranked, prompt_room(get_settings()), cap=costs[0] + costs[1])
        assert shown == ranked[:2]  # the cap bounds the pieces' share


def test_a_first_piece_too_large_for_the_window_is_cut_to_the_room_left() -> None:
    for make in (fragment, snippet):
        long = make(1, " ".join(["Малину поливают раз в неделю, по ведру воды на куст."] * 400))
        fixed = prompt_room(get_settings()) - 300  # room for about 300 tokens of pieces
        cost = count_tokens(long.text) + 7
        shown, _ = pipeline.fit(fixed, [cost], [], [long], prompt_room(get_settings()))
        assert len(shown) == 1 and type(shown[0]) is type(long)
        assert shown[0].text.endswith(" …") and long.text.startswith(shown[0].text.removesuffix(" …"))
        assert MIN_FRAGMENT_TOKENS < count_tokens(shown[0].text) + 7 <= 300
        assert shown[0].source_label() == long.source_label()


def test_history_takes_what_the_pieces_leave() -> None:
    history = []
    for n in range(10):
        history += [ChatMessage(role="user", content=f"Вопрос {n} про полив?"),
                    ChatMessage(role="assistant", content=" ".join([f"ответ{n}"] * 30))]
    ranked = pieces(fragment)
    costs = [count_tokens(p.text) + 5 for p in ranked]
    _, everything = pipeline.fit(100, costs, history, ranked, prompt_room(get_settings()))
    assert everything == history
    _, squeezed = pipeline.fit(prompt_room(get_settings()) - sum(costs) - 120, costs, history, ranked,
                                 prompt_room(get_settings()))
    assert 0 < len(squeezed) < len(history) and squeezed == history[-len(squeezed):]
    assert squeezed[0].role == "user"  # whole pairs only


class Model:
    """Answers from a list, recording what each request's system prompt said."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.systems: list[str] = []
        self.options: list[dict[str, Any]] = []

    def __call__(self, messages: list[dict[str, Any]], **options: Any) -> LLMReply:
        self.systems.append(messages[0]["content"])
        self.options.append(options)
        return LLMReply(content=self.answers.pop(0), finish_reason="stop")


def system(policy: TurnPolicy) -> str:
    return "правила; сигналы: " + ",".join(policy.signal_names)


LAST = "Малину поливают раз в неделю, по ведру воды на каждый куст, утром или вечером."


def test_a_reply_repeating_the_last_one_is_asked_for_once_more_with_the_signal() -> None:
    model = Model(LAST, LAST)
    policy = TurnPolicy(recent_bot=[LAST])
    messages = [{"role": "system", "content": system(policy)}, {"role": "user", "content": "Как поливать?"}]
    reply, after = pipeline.draft(model, messages, policy, system, decoding="d")
    assert len(model.systems) == 2  # once more, and only once, even though it repeated again
    assert "repetition" in model.systems[1] and "repetition" not in model.systems[0]
    assert model.options == [{"decoding": "d"}, {"decoding": "d"}]
    assert reply.content == LAST and "anti_repetition" in after.guards


def test_a_new_reply_is_not_asked_again() -> None:
    model = Model("Подкормку азотом дают весной, а калием — после сбора урожая.")
    policy = TurnPolicy(recent_bot=[LAST])
    messages = [{"role": "system", "content": system(policy)}, {"role": "user", "content": "Чем подкормить?"}]
    reply, after = pipeline.draft(model, messages, policy, system)
    assert len(model.systems) == 1 and after == policy and reply.content.startswith("Подкормку")


def test_the_block_names_only_the_pieces_that_back_the_answer() -> None:
    for make in (fragment, snippet):
        shown = pieces(make)
        reply = LLMReply(content="Подкормку азотом дают весной, калием — после сбора урожая [2].\n\n"
                                 "Источники: doc1.pdf", finish_reason="stop")
        checked = pipeline.check(reply, "Когда подкармливать малину?", shown)
        text = pipeline.compose(checked, shown)
        answer, block = text.split("\n\n" + HEADER + "\n")
        assert "Источники" not in answer  # the model's own list goes; the block is built
        assert block == f"• {shown[1].source_label()}"


def test_a_degenerate_draft_becomes_a_quote_of_the_pieces_with_their_source(env: Any) -> None:
    env(GROVE_QUOTE_SELECTOR="ranked")  # the lexical selector: no embedding model in the fast lane
    shown = pieces(snippet)
    loop = "Полив полив полив. " * 60
    checked = pipeline.check(LLMReply(content=loop, finish_reason="length"), "Как часто поливать малину?", shown,
                             max_chars=600)
    assert checked.fallback and checked.degenerate
    text = pipeline.compose(checked, shown)
    assert "раз в неделю" in text and shown[0].source_label() in text


def test_nothing_to_say_is_said_plainly() -> None:
    checked = pipeline.check("", "Как поливать?", [])
    assert pipeline.compose(checked.model_copy(update={"text": ""}), []) == pipeline.NO_TEXT
