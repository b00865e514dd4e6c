"""Answers a user accepts: the local model's search gate, degenerate drafts, checked citations.

The chat and consultation flows run for real (Postgres, EmbeddingGemma vectors, Prefect);
the model's words are fixed by the scripted OpenAI-compatible server. Pointed at it
without an API key, the flows treat it as the local model (`GROVE_LOCAL_LLM_URL`); with a
key, as a remote one. What is checked is what grove does around the model: whether it
searched, what it showed the model, what replaced a bad draft, which sources it names,
and what reached the moderation queue.
"""

from __future__ import annotations

import json
import re
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from nodes.answering.answer_check import EXTRACT_LEAD
from nodes.store.document_store import ChunkRecord, store_document
from nodes.embedding.embedder import get_embedder
from grove.core.ingest_types import ExtractedDocument
from nodes.answering.chat_drafts import GENERAL_LEAD
from nodes.answering.quote import NEAREST_LEAD, QUOTE_LEAD
from nodes.retrieval.unified_retrieve import LIBRARY_OWNER
from tests.support.scripted_llm import Response, ScriptedLLM, error, text, tool_call

pytestmark = pytest.mark.timeout(240)

RASPBERRY = [
    "Ремонтантную малину весной подкармливают азотом: 15 г мочевины на квадратный метр.",
    "Летом малине нужен калий и фосфор, азот после июля не вносят.",
    "Осенью побеги ремонтантной малины срезают под корень, а летнюю малину обрезают после плодоношения.",
]
SPRING = "Чем подкормить малину весной?"
LOOP = "Завтрак: белки, орехи, кальций и творог каждый день. " * 5
ENGLISH = "In spring you should feed raspberries with a nitrogen fertilizer, about fifteen grams per square metre."


def index(owner: int, name: str, texts: list[str], culture: str | None = None) -> int:
    """Store a document with real EmbeddingGemma vectors, one chunk (and page) per text."""
    document = ExtractedDocument(source_type="pdf", source_identifier=name, title=None, text="\n\n".join(texts))
    stored = store_document.fn(owner, document, [ChunkRecord(position=i, text=t, page=i + 1)
                                                 for i, t in enumerate(texts)],
                               get_embedder().embed_documents(texts), culture)
    return stored.document_id


@pytest.fixture
def local(env):  # type: ignore[no-untyped-def]
    """The scripted server as the local model: no API key, its URL as the local server's."""
    with ScriptedLLM() as server:
        env(GROVE_LOCAL_LLM_URL=server.base_url, GROVE_LLM_RETRIES="0")
        yield server


@pytest.fixture
def remote(env):  # type: ignore[no-untyped-def]
    with ScriptedLLM() as server:
        env(GROVE_LLM_API_KEY="test-key", GROVE_LLM_BASE_URL=server.base_url, GROVE_LLM_MODEL="scripted",
            GROVE_LLM_RETRIES="0")
        yield server


def ask_chat(question: str, user_id: int):  # type: ignore[no-untyped-def]
    from flows.chat import chat
    from nodes.store.user_state import session_of

    return chat(question, user_id, session_of.fn(user_id, user_id))


def system_of(request: dict[str, Any]) -> str:
    return request["messages"][0]["content"]


def shown_numbers(request: dict[str, Any]) -> dict[str, int]:
    """Which number each fragment text got in the local model's prompt."""
    return {body: int(n) for n, body in re.findall(r"^\[(\d+)\] \([^)]*\) «(.*)»$", system_of(request), re.MULTILINE)}


def sources(answer_text: str) -> str:
    return answer_text.partition("Информация взята из:")[2]


# --------------------------------------------------------------------------- the search gate


def test_a_plain_question_is_searched_and_answered_from_the_fragments(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("Весной малину подкармливают азотом: 15 г мочевины на квадратный метр [1]."))
    answer = ask_chat(SPRING, user_id)  # no «в базе», no file name: a plain question
    [request] = local.requests
    assert "tools" not in request  # the code searched; the small model is not offered the tool
    assert answer.tool_called and answer.tool_query == SPRING
    assert answer.gate_passed is True and answer.gate_score is not None
    assert RASPBERRY[0] in system_of(request)
    assert "15 г мочевины" in answer.text and not answer.fallback
    assert re.search(r"малина\.pdf, с\. 1\b", sources(answer.text))
    assert "с. 2" not in sources(answer.text) and "с. 3" not in sources(answer.text)


def test_a_question_the_documents_do_not_answer_gets_no_fragments(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("Столица Франции — Париж."))
    answer = ask_chat("Какая столица Франции?", user_id)
    [request] = local.requests
    assert answer.tool_called and answer.gate_passed is False  # searched, but the gate stayed shut
    assert all(fact not in system_of(request) for fact in RASPBERRY)
    # no source block, and the model's general answer is said to be one, not the documents'
    assert answer.fragments == [] and answer.text == f"{GENERAL_LEAD}\n\nСтолица Франции — Париж."


def test_small_talk_far_from_the_documents_is_answered_without_the_label(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("Здравствуйте! Рад помочь."))
    answer = ask_chat("Привет!", user_id)
    assert answer.gate_passed is False and answer.text == "Здравствуйте! Рад помочь."


def test_a_question_in_the_near_band_gets_the_nearest_passages_and_no_model_answer(
        store: str, local: ScriptedLLM, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    index(user_id, "малина.pdf", RASPBERRY)
    env(GROVE_SEARCH_GATE_THRESHOLD="0.0", GROVE_SEARCH_GATE_NEAR="0.99")  # anything found is only near
    answer = ask_chat(SPRING, user_id)
    assert local.requests == []  # a small model's general answer is not what a near miss gets
    assert answer.tool_called and answer.gate_passed is False and answer.gate_near
    body = answer.text.partition("Информация взята из:")[0]
    assert body.startswith(NEAREST_LEAD) and f"«{RASPBERRY[0]}" in body
    assert re.search(r"малина\.pdf, с\. 1\b", sources(answer.text)) and not answer.fallback
    env(GROVE_SEARCH_GATE_NEAR="0.0")  # the band turned off: the gate is shut, the model answers alone
    local.script(text("Подкормите малину комплексным удобрением."))
    answer = ask_chat(SPRING, user_id)
    assert len(local.requests) == 1 and not answer.gate_near and answer.fragments == []
    assert answer.text == f"{GENERAL_LEAD}\n\nПодкормите малину комплексным удобрением."


def test_past_the_near_band_a_question_whose_passages_the_model_is_sure_answer_is_drafted_from_them(
        store: str, local: ScriptedLLM, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    """Issue 37 (sets AQ, AR): asked in the user's own words, a question sat far from the passage that answers
    it (the gate shut) and got «В ваших документах этого нет» over a general answer. Judged sure to be
    answered (at the shut band's own odds, below the near band's), the passages are drafted from; judged
    less, they are shown as the nearest (sets AW, AX: a general answer to a question in the user's words was
    never right); judged unlikely to answer, as a general question's passages are, the general answer
    stands; a greeting is not judged."""
    index(user_id, "малина.pdf", RASPBERRY)
    env(GROVE_SEARCH_GATE_THRESHOLD="0.0", GROVE_SEARCH_GATE_NEAR="0.0")  # everything found is far
    local.judge = 0.9
    local.script(text("Весной малину подкармливают азотом: 15 г мочевины на квадратный метр [1]."))
    answer = ask_chat(SPRING, user_id)
    [request] = local.requests
    assert not answer.gate_passed and not answer.gate_near and answer.judged == pytest.approx(0.9)
    assert RASPBERRY[0] in system_of(request)
    assert answer.text.startswith("Весной малину подкармливают азотом") and GENERAL_LEAD not in answer.text
    assert re.search(r"малина\.pdf, с\. 1\b", sources(answer.text))
    local.judge = 0.77  # below the near band's odds, at the shut band's own (`local_answer_judge_far`): drafted
    local.script(text("Ремонтантную малину весной подкармливают мочевиной, 15 г на метр [1]."))
    answer = ask_chat(SPRING, user_id)
    assert len(local.requests) == 2 and answer.text.startswith("Ремонтантную малину весной подкармливают")
    local.judge = 0.7  # below the shut band's odds: the nearest passages, said to be the nearest, no draft
    answer = ask_chat(SPRING, user_id)
    assert len(local.requests) == 2 and answer.judged == pytest.approx(0.7) and not answer.fallback
    assert answer.text.startswith(NEAREST_LEAD) and f"«{RASPBERRY[0]}" in answer.text
    assert re.search(r"малина\.pdf, с\. 1\b", sources(answer.text))
    local.judge = 0.3  # below the odds that the passages answer (`local_answer_judge`): a general answer, said so
    local.script(text("Подкормите малину комплексным удобрением."))
    answer = ask_chat(SPRING, user_id)
    assert len(local.requests) == 3 and answer.fragments == [] and answer.judged == pytest.approx(0.3)
    assert all(fact not in system_of(local.requests[-1]) for fact in RASPBERRY)
    assert answer.text == f"{GENERAL_LEAD}\n\nПодкормите малину комплексным удобрением."
    judged = len(local.judgments)
    local.script(text("Здравствуйте!"))
    assert ask_chat("Привет!", user_id).text == "Здравствуйте!" and len(local.judgments) == judged


def test_a_question_typed_without_its_mark_is_judged_as_one_where_the_gate_shuts(
        store: str, local: ScriptedLLM, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    """Issue 37 (set BD): «звук с клавы как прибавить», «зум картинки на какую кнопку» were taken for remarks
    where the gate shut: never judged, answered from the model's own knowledge with no label. Asked so in a
    chat, a question gets its passages judged; judged unlikely to answer, a general answer under its label."""
    index(user_id, "малина.pdf", RASPBERRY)
    env(GROVE_SEARCH_GATE_THRESHOLD="0.0", GROVE_SEARCH_GATE_NEAR="0.0")  # everything found is far
    local.judge = 0.7
    answer = ask_chat("ремонтантную малину весной подкармливать, мочевины сколько на метр", user_id)
    assert local.requests == [] and answer.judged == pytest.approx(0.7)
    assert answer.text.startswith(NEAREST_LEAD) and f"«{RASPBERRY[0]}" in answer.text
    local.judge = 0.3
    local.script(text("Подкормите малину комплексным удобрением."))
    answer = ask_chat("малина весной, подкормить как", user_id)
    assert answer.text == f"{GENERAL_LEAD}\n\nПодкормите малину комплексным удобрением."


def test_in_the_near_band_passages_the_model_is_sure_answer_are_drafted_from(
        store: str, local: ScriptedLLM, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    """Issue 37: a user's everyday words keep a question in the near band over the passage that answers it,
    and the reply said «не нашёл» above it. Judged to answer with the near band's higher odds, the
    passages are drafted from as past the gate; below those odds they stay the nearest, with no draft."""
    index(user_id, "малина.pdf", RASPBERRY)
    env(GROVE_SEARCH_GATE_THRESHOLD="0.0", GROVE_SEARCH_GATE_NEAR="0.99")  # anything found is only near
    local.judge = 0.9
    local.script(text("Весной малину подкармливают азотом: 15 г мочевины на квадратный метр [1]."))
    answer = ask_chat(SPRING, user_id)
    [request] = local.requests
    assert answer.gate_near and not answer.gate_passed and answer.judged == pytest.approx(0.9)
    assert RASPBERRY[0] in system_of(request)
    assert answer.text.startswith("Весной малину подкармливают азотом") and GENERAL_LEAD not in answer.text
    assert re.search(r"малина\.pdf, с\. 1\b", sources(answer.text))
    local.judge = 0.77  # enough past the gate and where it shuts, not in the near band
    answer = ask_chat(SPRING, user_id)
    assert len(local.requests) == 1 and answer.text.startswith(NEAREST_LEAD)


def test_a_word_the_base_lacks_does_not_shut_out_a_passage_that_answers_in_other_words(
        store: str, local: ScriptedLLM, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    """«Что означает значок доллара…» over «…заканчивается символами $, %, #»: the base never says the
    user's word, yet a passage holds most of the question; the model answers from it. A question about
    a thing the base lacks, which no passage covers, still gets the nearest passages alone."""
    index(user_id, "малина.pdf", RASPBERRY)
    # Every search result clears the score; the everyday-word rule is off, so only the covering test opens.
    env(GROVE_SEARCH_GATE_THRESHOLD="0.99", GROVE_SEARCH_GATE_NEAR="0.999", GROVE_SEARCH_GATE_EVERYDAY_OVERLAP="1.01")
    local.script(text("Весной ремонтантную малину подкармливают мочевиной, 15 г на метр [1]."))
    answer = ask_chat("Сколько мочевины сыпать на грядку ремонтантной малины весной?", user_id)
    assert len(local.requests) == 1 and answer.gate_passed and not answer.gate_near
    assert RASPBERRY[0] in system_of(local.requests[0]) and "не встречается" not in answer.text
    assert answer.text.startswith("Весной ремонтантную малину подкармливают мочевиной")
    answer = ask_chat("Какой сорт клубники выбрать для теплицы?", user_id)
    assert len(local.requests) == 1 and answer.gate_near and not answer.gate_passed  # no second request
    assert answer.text.startswith("В ваших документах этого нет:") and "«клубники»" in answer.text


SCREEN = ["Снимок экрана сохраняется как изображение в папке «Изображения» домашнего каталога."]


def test_a_users_word_for_one_the_passage_uses_does_not_shut_the_gate(
        store: str, local: ScriptedLLM, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    """Issue 37: «картинка» where the manual writes «изображение» kept the question in the near band, under
    «В ваших документах этого нет: «картинка» в них не встречается», over the passage that answers it.
    Matched by meaning to a word of the passage shown, it opens the gate; with the match turned off, or for
    a thing the base never names, the nearest passages stand alone."""
    index(user_id, "снимки.pdf", SCREEN)
    # Every search result clears the score; only the missing word shuts the gate, and no other rule opens it.
    env(GROVE_SEARCH_GATE_THRESHOLD="0.99", GROVE_SEARCH_GATE_NEAR="0.999", GROVE_SEARCH_GATE_EVERYDAY_OVERLAP="1.01")
    local.judge = 0.7  # enough past the gate, not in the near band
    local.script(text("Картинка попадает в папку «Изображения» домашнего каталога [1]."))
    question = "Куда потом девается сделанная картинка?"
    answer = ask_chat(question, user_id)
    assert answer.gate_passed and answer.unknown == [] and SCREEN[0] in system_of(local.requests[-1])
    assert answer.text.startswith("Картинка попадает в папку") and "не встречается" not in answer.text
    asked = len(local.requests)
    env(GROVE_SEARCH_GATE_SYNONYM_LINE="1.01")
    answer = ask_chat(question, user_id)
    assert answer.gate_near and answer.unknown == ["картинка"] and len(local.requests) == asked
    assert answer.text.startswith("В ваших документах этого нет:") and "«картинка»" in answer.text
    env(GROVE_SEARCH_GATE_SYNONYM_LINE="0.86")
    answer = ask_chat("Куда потом девается сделанная по Bluetooth картинка?", user_id)
    assert answer.gate_near and answer.unknown == ["Bluetooth"] and len(local.requests) == asked


def test_a_user_without_documents_is_not_searched(store: str, local: ScriptedLLM, user_id: int) -> None:
    local.script(text("Весной малину подкармливают азотом."))
    answer = ask_chat(SPRING, user_id)
    assert not answer.tool_called and answer.gate_passed is None and answer.tool_query is None
    assert answer.text == "Весной малину подкармливают азотом."


def test_a_short_follow_up_is_searched_with_the_question_before_it(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("Весной малину подкармливают азотом [1]."), text("Летом — калием и фосфором [1]."))
    ask_chat(SPRING, user_id)
    answer = ask_chat("А летом?", user_id)
    assert answer.tool_query == f"{SPRING} А летом?"
    assert answer.gate_passed and RASPBERRY[1] in system_of(local.requests[1])


def test_the_remote_model_still_decides_and_searches_at_most_once(
        store: str, remote: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    remote.script(text("Здравствуйте! Чем помочь?"))
    answer = ask_chat("Привет", user_id)
    [request] = remote.requests
    assert request["tool_choice"] == "auto" and [t["function"]["name"] for t in request["tools"]] == ["rag-db-query"]
    assert not answer.tool_called and answer.gate_passed is None
    assert "repeat_penalty" not in request and "top_k" not in request  # llama.cpp's samplers stay local


def test_a_junk_query_from_the_model_is_replaced_by_the_question(
        store: str, remote: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    remote.script(tool_call({"query": "SELECT COUNT(*) FROM documents WHERE status = 'pending'"}),
                  text("Весной — азотом, 15 г мочевины на квадратный метр [1]."))
    answer = ask_chat(SPRING, user_id)
    assert answer.tool_query == SPRING
    assert answer.fragments[0].text == RASPBERRY[0]  # the question found the right page first
    assert re.search(r"малина\.pdf, с\. 1\b", sources(answer.text))


def test_the_local_model_gets_the_measured_decoding(store: str, local: ScriptedLLM, user_id: int) -> None:
    from grove.core.settings import get_settings

    local.script(text("Комплексным удобрением."), text("Азотом, 15 г мочевины на метр [1]."))
    ask_chat(SPRING, user_id)  # no documents: an answer from general knowledge, kept short
    index(user_id, "малина.pdf", RASPBERRY)
    ask_chat(SPRING, user_id)  # from the fragments
    general, documents = local.requests
    settings = get_settings()
    for request in (general, documents):
        assert request["repeat_penalty"] == settings.local_answer_repeat_penalty
        assert request["temperature"] == settings.local_answer_temperature
    assert general["max_tokens"] == settings.local_general_max_tokens < settings.local_answer_max_tokens
    assert documents["max_tokens"] == settings.local_answer_max_tokens


# --------------------------------------------------------------------------- degenerate drafts


@pytest.mark.parametrize(("draft", "failed"), [("[4]", "bare_citations"), (LOOP, "repetition"),
                                               (ENGLISH, "not_russian")])
def test_a_degenerate_draft_gets_the_extractive_answer_with_its_source(
        store: str, local: ScriptedLLM, user_id: int, draft: str, failed: str) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text(draft))
    answer = ask_chat(SPRING, user_id)
    assert answer.fallback and failed in answer.degenerate
    body = answer.text.partition("Информация взята из:")[0]
    assert body.startswith(f"{EXTRACT_LEAD}\n> «{RASPBERRY[0]}»")  # the sentence that answers, quoted first
    assert draft.strip() not in answer.text
    # The source block names what is quoted: the answer's page, the summer feeding beside it at most,
    # never the autumn pruning.
    assert re.search(r"малина\.pdf, с\. 1\b", sources(answer.text)) and "с. 3" not in sources(answer.text)
    assert sources(answer.text).count("•") == body.count("«")


def test_a_degenerate_draft_without_fragments_says_so_plainly(store: str, local: ScriptedLLM, user_id: int) -> None:
    local.script(text(LOOP))
    answer = ask_chat("Как правильно подкармливать?", user_id)
    assert answer.fallback and "repetition" in answer.degenerate
    assert "Завтрак" not in answer.text and "Информация взята из" not in answer.text


# --------------------------------------------------------------------------- citations


def test_a_citation_of_a_fragment_that_does_not_say_it_is_corrected(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)

    def cite_the_wrong_fragment(request: dict[str, Any]) -> Response:
        numbers = shown_numbers(request)
        wrong = numbers[RASPBERRY[1]]
        return text(f"Весной малину подкармливают азотом: 15 г мочевины на квадратный метр [{wrong}].")(request)

    local.script(cite_the_wrong_fragment)
    answer = ask_chat("Чем и сколько подкармливать малину весной?", user_id)
    numbers = shown_numbers(local.requests[0])
    assert f"[{numbers[RASPBERRY[0]]}]" in answer.text and f"[{numbers[RASPBERRY[1]]}]" not in answer.text
    assert re.search(r"малина\.pdf, с\. 1\b", sources(answer.text)) and "с. 2" not in sources(answer.text)


def test_an_answer_without_citations_names_the_sources_it_overlaps(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    index(user_id, "календарь.pdf", ["Весной в саду белят стволы, а малину подкармливают по талой земле."])
    local.script(text("Весной малину подкармливают азотом: 15 г мочевины на квадратный метр."))
    answer = ask_chat(SPRING, user_id)
    assert len(answer.fragments) >= 2  # several were shown; only the one that says it is named
    block = sources(answer.text)
    assert re.search(r"малина\.pdf, с\. 1\b", block)
    assert "календарь.pdf" not in block and "с. 2" not in block


def test_nonsense_without_citations_names_no_source(
        store: str, local: ScriptedLLM, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_LOCAL_ANSWER_QUOTE="false", GROVE_LOCAL_ANSWER_STRICT="false")  # shown as drafted
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("Малина — это ягода. Её едят летом и варят из неё варенье."))
    answer = ask_chat(SPRING, user_id)
    assert not answer.fallback and not answer.quoted and "Информация взята из" not in answer.text


def test_a_local_draft_no_fragment_backs_gives_way_to_the_documents_words(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("Малина — это ягода. Её едят летом и варят из неё варенье."))
    answer = ask_chat(SPRING, user_id)
    assert answer.fallback and answer.degenerate == ["unsupported"]
    assert "ягода" not in answer.text and "15 г мочевины" in answer.text and "малина.pdf" in answer.text


# --------------------------------------------------------------------------- the backing quote


def test_a_local_answer_ends_with_the_passage_that_backs_it(store: str, local: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("Весной малину подкармливают азотом [1]."))
    answer = ask_chat(SPRING, user_id)
    body, block = answer.text.partition("Информация взята из:")[::2]
    assert answer.quoted and not answer.fallback
    assert body.startswith("Весной малину подкармливают азотом")
    assert f"{QUOTE_LEAD}\n> «{RASPBERRY[0]}»" in body  # the document's own words (folded): how much, of what
    assert re.search(r"малина\.pdf, с\. 1\b", block) and "с. 2" not in block and "с. 3" not in block


def test_the_quote_is_the_passage_the_answer_drew_on_and_its_source_is_named(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("Осенью побеги срезают под корень."))
    answer = ask_chat("Как ухаживать за ремонтантной малиной?", user_id)
    body, block = answer.text.partition("Информация взята из:")[::2]
    assert answer.gate_passed and answer.quoted
    assert body.rstrip().endswith(f"«{RASPBERRY[2]}»")
    assert re.search(r"малина\.pdf, с\. 3\b", block)


def test_nonsense_gets_the_quote_that_answers_and_only_its_source(
        store: str, local: ScriptedLLM, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_LOCAL_ANSWER_STRICT="false")  # the draft is shown (strict, it gives way: above)
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("Малина — это ягода. Её едят летом и варят из неё варенье."))
    answer = ask_chat(SPRING, user_id)
    body, block = answer.text.partition("Информация взята из:")[::2]
    assert f"{QUOTE_LEAD}\n> «{RASPBERRY[0]}»" in body  # what the document says about the question, whatever the model said
    assert re.search(r"малина\.pdf, с\. 1\b", block) and "с. 3" not in block
    assert block.count("•") == body.count("«")  # only what is quoted is named


def test_a_remote_answer_is_not_quoted(store: str, remote: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    remote.script(tool_call({"query": SPRING}), text("Весной — азотом [1]."))
    answer = ask_chat(SPRING, user_id)
    assert answer.tool_called and not answer.quoted and QUOTE_LEAD not in answer.text


# --------------------------------------------------------------------------- consultation


class Classifier:
    """Classification requests answered from a table; answers from a queue (like test_consultation)."""

    def __init__(self, cultures: dict[str, str], answers: list[str]) -> None:
        self.cultures, self.answers = cultures, list(answers)
        self.answered: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Response:
        if body["messages"][0]["content"].startswith("Определи культуру"):
            return text(self.cultures.get(body["messages"][-1]["content"], "не определено"))(body)
        self.answered.append(body)
        return text(self.answers.pop(0))(body)


def queued(url: str, user_id: int) -> list[dict]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        return conn.execute("select * from moderation_queue where user_id = %s", (user_id,)).fetchall()


def consult(question: str, user_id: int):  # type: ignore[no-untyped-def]
    from flows.consultation import consultation
    from nodes.store.user_state import session_of

    return consultation(question, user_id, session_of.fn(user_id, user_id))


def test_unclear_crop_with_nothing_to_retrieve_asks_the_profiles_question(
        store: str, env, user_id: int) -> None:  # type: ignore[no-untyped-def]
    from nodes.store.consultation_state import read_state
    from grove.core.domain_profile import load_profile

    model = Classifier({}, [])
    with ScriptedLLM(default=model) as server:
        env(GROVE_LOCAL_LLM_URL=server.base_url, GROVE_LLM_RETRIES="0", GROVE_DOMAIN_PROFILE="berries")
        answer = consult("Как правильно подкармливать?", user_id)
    assert answer.kind == "clarification" and answer.text == load_profile("berries").culture_question
    assert model.answered == []  # no general answer was generated
    assert read_state.fn(user_id).state == "waiting_clarification_answer"
    assert queued(store, user_id) == []


def test_a_degenerate_consultation_answer_is_quoted_and_not_queued(
        store: str, env, user_id: int) -> None:  # type: ignore[no-untyped-def]
    blueberry = f"Голубику сажают в кислую почву с pH 4–5, в яму добавляют верховой торф ({user_id})."
    document = index(LIBRARY_OWNER, f"голубика-{user_id}.pdf", [blueberry], "голубика")
    model = Classifier({"Как посадить голубику?": "голубика"}, [LOOP])
    try:
        with ScriptedLLM(default=model) as server:
            env(GROVE_LOCAL_LLM_URL=server.base_url, GROVE_LLM_RETRIES="0", GROVE_DOMAIN_PROFILE="berries")
            answer = consult("Как посадить голубику?", user_id)
    finally:
        with psycopg.connect(store) as conn:
            conn.execute("delete from documents where id = %s", (document,))
    assert answer.kind == "answer" and answer.fallback and "repetition" in answer.degenerate
    assert blueberry in answer.text and "Завтрак" not in answer.text
    assert f"голубика-{user_id}.pdf" in answer.text
    assert answer.moderation_id is None and queued(store, user_id) == []
    with psycopg.connect(store) as conn:  # the turn is still logged in the history
        logged = conn.execute("select count(*) from chat_messages where user_id = %s", (user_id,)).fetchone()[0]
    assert logged == 2


def test_a_consultation_shows_its_answer_in_the_draft_it_is_handed_and_nothing_else(
        store: str, env, user_id: int) -> None:  # type: ignore[no-untyped-def]
    """The turn's draft is handed to the consultation's answer call: the model's words reach it as they
    are written, the culture classifier's label (a call handed no draft) does not."""
    from flows.consultation import consultation
    from nodes.store.user_state import session_of

    blueberry = f"Голубику сажают в кислую почву с pH 4–5, в яму добавляют верховой торф ({user_id})."
    document = index(LIBRARY_OWNER, f"голубика-{user_id}.pdf", [blueberry], "голубика")
    said = "Голубику сажают в кислую почву с pH 4–5, добавив в яму верховой торф [1]."
    model = Classifier({"Как посадить голубику?": "голубика"}, [said])
    seen: list[str] = []
    try:
        with ScriptedLLM(default=model) as server:
            env(GROVE_LOCAL_LLM_URL=server.base_url, GROVE_LLM_RETRIES="0", GROVE_DOMAIN_PROFILE="berries")
            answer = consultation("Как посадить голубику?", user_id, session_of.fn(user_id, user_id),
                                  show=seen.append)
    finally:
        with psycopg.connect(store) as conn:
            conn.execute("delete from documents where id = %s", (document,))
    assert answer.kind == "answer" and answer.culture == "голубика" and len(model.answered) == 1
    assert seen and seen[-1] == said and all(said.startswith(s) for s in seen)  # the answer's words only


def test_a_degenerate_consultation_answer_over_a_passage_that_does_not_answer_is_the_nearest(
        store: str, env, user_id: int) -> None:  # type: ignore[no-untyped-def]
    from flows.texts import CONSULTATION_EXTRACT_LEAD, CONSULTATION_NEAREST_LEAD

    blueberry = f"Голубику сажают в кислую почву с pH 4–5, в яму добавляют верховой торф ({user_id})."
    document = index(LIBRARY_OWNER, f"голубика-{user_id}.pdf", [blueberry], "голубика")
    question = "Сколько лет плодоносит куст голубики?"  # the library says how to plant it, nothing more
    model = Classifier({question: "голубика"}, [LOOP])
    try:
        with ScriptedLLM(default=model) as server:
            env(GROVE_LOCAL_LLM_URL=server.base_url, GROVE_LLM_RETRIES="0", GROVE_DOMAIN_PROFILE="berries")
            answer = consult(question, user_id)
    finally:
        with psycopg.connect(store) as conn:
            conn.execute("delete from documents where id = %s", (document,))
    assert answer.kind == "answer" and answer.fallback and "repetition" in answer.degenerate
    assert answer.text.startswith(f"{CONSULTATION_NEAREST_LEAD}\n«{blueberry}»")
    assert CONSULTATION_EXTRACT_LEAD not in answer.text and f"голубика-{user_id}.pdf" in answer.text
    assert answer.moderation_id is None and queued(store, user_id) == []


def test_a_refusal_with_the_answer_in_the_fragments_gets_the_quote(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    """Seen in bench/answer_eval: the right fragment in the prompt, and «об этом не сказано»."""
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("В ваших документах об этом не сказано."), text("Об этом не сказано."))  # asked again too
    answer = ask_chat(SPRING, user_id)
    assert answer.fallback and "refused" in answer.degenerate and not answer.reasked
    assert answer.text.startswith(EXTRACT_LEAD) and RASPBERRY[0] in answer.text
    assert re.search(r"малина\.pdf, с\. 1\b", sources(answer.text))


def test_a_refusal_stands_when_no_fragment_sentence_matches(store: str, user_id: int) -> None:
    from nodes.answering.answer_check import check_answer

    checked = check_answer("В ваших документах об этом не сказано.", "Как перезимовать голубике на балконе?",
                           ["Ремонтантную малину весной подкармливают азотом."])
    assert not checked.fallback and checked.text == "В ваших документах об этом не сказано."


def test_a_refusal_over_fragments_that_do_not_cover_the_question_stands_over_the_nearest_passage(
        store: str, local: ScriptedLLM, user_id: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import nodes.answering.answer_check

    # No sentence covers enough of the question to call the refusal wrong (the `refused` check
    # stays silent), yet the gate passed the fragments: the nearest passage is shown as such.
    monkeypatch.setattr(nodes.answering.answer_check, "REFUSAL_OVERRULE_COVERAGE", 1.01)
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("В ваших документах об этом не сказано."), text("Осенью малину укрывают [1]."))
    answer = ask_chat("Как ухаживать за ремонтантной малиной осенью?", user_id)
    body, block = answer.text.partition("Информация взята из:")[::2]
    # Not asked again: from the nearest passages alone the model answers whatever the question.
    assert len(local.requests) == 1 and not answer.reasked and "укрывают" not in answer.text
    assert answer.gate_passed and answer.quoted
    assert body.startswith(NEAREST_LEAD) and "не сказано" not in body  # not «not said» above a quote
    assert f"«{RASPBERRY[2]}»" in body and re.search(r"малина\.pdf, с\. 3\b", block)


def test_passages_the_model_judges_not_to_answer_are_shown_as_the_nearest_with_no_draft(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    """Issue 37: a silent question can sit as close to a passage as one the documents answer (the gate
    passed it) and the model then answered from a passage about something else. Asked first whether
    the passages to be quoted answer, the model's odds below the threshold stop the draft."""
    index(user_id, "малина.pdf", RASPBERRY)
    local.judge = 0.2
    answer = ask_chat(SPRING, user_id)
    [judged] = local.judgments
    assert local.requests == []  # no draft was asked
    assert judged["max_tokens"] == 1 and judged["logprobs"] is True
    asked = judged["messages"][-1]["content"]
    assert f"«{RASPBERRY[0]}" in asked and asked.endswith("Отвечает ли отрывок на этот вопрос?") and SPRING in asked
    assert answer.gate_passed and answer.judged == pytest.approx(0.2) and not answer.fallback
    body, block = answer.text.partition("Информация взята из:")[::2]
    assert body.startswith(NEAREST_LEAD) and f"«{RASPBERRY[0]}" in body
    assert re.search(r"малина\.pdf, с\. 1\b", block)
    local.judge = 0.9  # at or above the threshold the model drafts as before
    local.script(text("Весной малину подкармливают азотом: 15 г мочевины на квадратный метр [1]."))
    answer = ask_chat(SPRING, user_id)
    assert len(local.requests) == 1 and answer.judged == pytest.approx(0.9)
    assert answer.text.startswith("Весной малину подкармливают азотом") and not answer.fallback


def test_a_refusal_over_passages_the_model_judges_to_answer_is_overruled_though_no_sentence_covers_it(
        store: str, local: ScriptedLLM, user_id: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37 (AD001): «Прямого ответа не нашёл» over «щёлкните по заголовку столбца Заметка» because the
    user's words were not the passage's. The model's own judgment that the passages answer overrules
    the refusal where the word test (`covers`) did not: asked again from the passage, it answers."""
    import nodes.answering.answer_check

    monkeypatch.setattr(nodes.answering.answer_check, "REFUSAL_OVERRULE_COVERAGE", 1.01)  # no sentence covers it
    monkeypatch.setattr(nodes.answering.answer_check, "MEANING_FLOOR_COVERAGE", 1.01)
    index(user_id, "малина.pdf", RASPBERRY)
    local.judge = 0.8
    local.script(text("В ваших документах об этом не сказано."),
                 text("Весной малину подкармливают азотом, 15 г мочевины на метр [1]."))
    answer = ask_chat(SPRING, user_id)
    first, again = local.requests
    assert "так и скажи" in system_of(first)  # the first draft may refuse
    assert "Ответ на вопрос есть во фрагменте" in system_of(again)  # asked with no way out of answering
    assert answer.reasked and answer.text.startswith("Весной малину подкармливают азотом")
    assert "не сказано" not in answer.text and NEAREST_LEAD not in answer.text
    # Judged not to answer, the same refusal would stand over the nearest passage: no draft at all.
    local.judge = 0.3
    answer = ask_chat(SPRING, user_id)
    assert len(local.requests) == 2 and answer.text.startswith(NEAREST_LEAD)


def test_a_refusal_over_passages_judged_to_answer_shows_them_as_the_answer_when_asked_again_it_fails(
        store: str, local: ScriptedLLM, user_id: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import nodes.answering.answer_check

    monkeypatch.setattr(nodes.answering.answer_check, "REFUSAL_OVERRULE_COVERAGE", 1.01)
    monkeypatch.setattr(nodes.answering.answer_check, "MEANING_FLOOR_COVERAGE", 1.01)
    index(user_id, "малина.pdf", RASPBERRY)
    local.judge = 0.8
    local.script(text("В ваших документах об этом не сказано."), text("Об этом не сказано."))
    answer = ask_chat(SPRING, user_id)
    assert answer.fallback and "refused" in answer.degenerate
    assert answer.text.startswith(EXTRACT_LEAD) and RASPBERRY[0] in answer.text  # not «не нашёл» above it


def test_a_second_draft_asked_with_no_way_out_is_checked_in_full_however_sure_the_judgment(
        store: str, local: ScriptedLLM, user_id: int, env, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 37 (set AZ, AZU07): a refusal over passages judged sure to answer was asked again with no way out,
    and the model stated in the question's own terms a feature no passage names. A first draft in the
    question's terms stands when the judgment is sure; a forced second one does not: the first draft's
    fallback (its passages) is shown."""
    import nodes.answering.answer_check

    monkeypatch.setattr(nodes.answering.answer_check, "REFUSAL_OVERRULE_COVERAGE", 1.01)  # no sentence covers it
    monkeypatch.setattr(nodes.answering.answer_check, "MEANING_FLOOR_COVERAGE", 1.01)
    env(GROVE_SEARCH_GATE_UNKNOWN_THINGS="false")
    index(user_id, "малина.pdf", RASPBERRY)
    local.judge = 0.9
    question = "Чем подкормить малину весной на балконе в кадке?"
    local.script(text("Малину на балконе в кадке весной подкармливают азотом [1]."))
    answer = ask_chat(question, user_id)
    assert not answer.fallback and answer.text.startswith("Малину на балконе в кадке")  # sure: the user's wording
    local.script(text("В ваших документах об этом не сказано."),
                 text("Малину на балконе в кадке весной подкармливают азотом [1]."))
    answer = ask_chat(question, user_id)
    assert len(local.requests) == 3 and not answer.reasked
    assert answer.fallback and "refused" in answer.degenerate and "в кадке" not in answer.text
    assert answer.text.startswith(EXTRACT_LEAD) and RASPBERRY[0] in answer.text


def test_a_draft_stating_what_no_passage_holds_is_replaced_by_the_nearest_passage_not_asked_again(
        store: str, local: ScriptedLLM, user_id: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37 (VU05): the question's own terms said as fact over passages on another matter. The reply
    says the documents hold no direct answer and shows the nearest passage as such; asked again from
    the nearest passages, the model would bend them again, so it is not."""
    import nodes.answering.answer_check

    monkeypatch.setattr(nodes.answering.answer_check, "REFUSAL_OVERRULE_COVERAGE", 1.01)  # nothing covers it
    monkeypatch.setattr(nodes.answering.answer_check, "MEANING_FLOOR_COVERAGE", 1.01)
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("Ухаживать за ремонтантной малиной на балконе осенью просто: кадки ставят на пенопласт [1]."),
                 text("Осенью малину укрывают [1]."))
    answer = ask_chat("Как ухаживать за ремонтантной малиной осенью на балконе?", user_id)
    body, block = answer.text.partition("Информация взята из:")[::2]
    assert answer.gate_passed and answer.fallback and "unfounded" in answer.degenerate
    assert len(local.requests) == 1 and not answer.reasked
    assert body.startswith(NEAREST_LEAD) and "балкон" not in body and "пенопласт" not in body
    assert answer.draft is not None and "пенопласт" in answer.draft  # the run's reader sees what was replaced
    assert f"«{RASPBERRY[2]}»" in body and re.search(r"малина\.pdf, с\. 3\b", block)


def test_passages_after_an_invented_draft_lead_as_the_answer_only_when_the_judgment_is_surest(
        store: str, local: ScriptedLLM, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    """Issue 37 (sets BC–BX): a draft naming what no passage holds, over passages judged to answer at
    0.71–0.87, was replaced by those passages under «В ваших документах об этом сказано так:» — for 8
    silent questions as for 5 answerable ones. The invention is a sign they do not answer: below
    `local_fallback_judge` (0.9) they are shown as the nearest."""
    index(user_id, "малина.pdf", RASPBERRY)
    local.judge = 0.85
    invented = text("Весной малину подкармливают селитрой Agrecol, 40 г на куст [1].")
    local.script(invented, invented)  # asked again from the answering passage, it names the same
    answer = ask_chat(SPRING, user_id)
    body = answer.text.partition("Информация взята из:")[0]
    assert answer.gate_passed and answer.fallback and "invents" in answer.degenerate
    assert body.startswith(NEAREST_LEAD) and f"«{RASPBERRY[0]}" in body and "Agrecol" not in body
    env(GROVE_LOCAL_FALLBACK_JUDGE="0.8")  # judged at the fallback's odds: the passages lead as the answer
    local.script(invented, invented)
    answer = ask_chat(SPRING, user_id)
    body = answer.text.partition("Информация взята из:")[0]
    assert answer.fallback and body.startswith(EXTRACT_LEAD) and f"«{RASPBERRY[0]}" in body


def test_a_refusal_over_passing_fragments_is_asked_again_from_the_answering_passage(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    """Issue 37: «не нашёл» over the very passage that answers; given that passage alone, the model answers."""
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text("В ваших документах об этом не сказано."),
                 text("Весной малину подкармливают азотом, 15 г мочевины на метр [1]."))
    answer = ask_chat(SPRING, user_id)
    first, again = local.requests
    assert all(fact in system_of(first) for fact in RASPBERRY)  # the whole fragments first
    assert RASPBERRY[0] in system_of(again) and RASPBERRY[2] not in system_of(again)  # then the passage alone
    assert again["messages"][-1] == first["messages"][-1]  # the same question
    # A sentence covers the question (the refusal would be overruled): no way out of answering this time.
    assert "так и скажи" in system_of(first)
    assert "Ответ на вопрос есть во фрагменте" in system_of(again) and "так и скажи" not in system_of(again)
    assert answer.reasked and not answer.fallback and answer.text.startswith("Весной малину подкармливают азотом")
    assert answer.draft is None
    assert "не сказано" not in answer.text and re.search(r"малина\.pdf, с\. 1\b", sources(answer.text))


def test_a_draft_that_fails_the_checks_is_asked_again_from_the_answering_passage(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    """Issue 37: a draft that loops (or invents) over fragments the gate passed; from the passage alone
    the model says the fact in its own words, and that answer is shown instead of the bare quote."""
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text(LOOP), text("Весной малину подкармливают азотом, 15 г мочевины на метр [1]."))
    answer = ask_chat(SPRING, user_id)
    first, again = local.requests
    assert all(fact in system_of(first) for fact in RASPBERRY)
    assert RASPBERRY[0] in system_of(again) and RASPBERRY[2] not in system_of(again)
    assert again["messages"][-1] == first["messages"][-1]
    assert answer.reasked and not answer.fallback and not answer.degenerate
    assert answer.text.startswith("Весной малину подкармливают азотом") and "Завтрак" not in answer.text
    assert re.search(r"малина\.pdf, с\. 1\b", sources(answer.text))


@pytest.mark.parametrize("second", [text(LOOP), error(500)], ids=["fails-again", "request-fails"])
def test_a_second_draft_that_fails_leaves_the_first_drafts_fallback(
        store: str, local: ScriptedLLM, user_id: int, second) -> None:  # type: ignore[no-untyped-def]
    """A second draft is shown only when it passes the checks; otherwise (or when its request fails)
    the turn ends as it would have without it: the passages, never an apology or the loop."""
    index(user_id, "малина.pdf", RASPBERRY)
    local.script(text(LOOP), second)
    answer = ask_chat(SPRING, user_id)
    assert len(local.requests) == 2 and not answer.failed
    assert answer.fallback and "repetition" in answer.degenerate and not answer.reasked
    assert answer.text.startswith(EXTRACT_LEAD) and RASPBERRY[0] in answer.text and "Завтрак" not in answer.text


# Cervisia's handbook in Russian (set BO, p. 5): a folder, unlike a file, needs no commit once added.
ADDING = ["Cervisia выполнит команду cvs add имена файлов. Чтобы фактически поместить файлы в репозиторий, вы "
          "должны передать их. Обратите внимание, что добавление каталогов не требует передачи впоследствии."]
FOLDER_COMMIT = "Нужно ли передавать изменения в репозиторий после добавления нового каталога через Cervisia?"
YES = "Да, нужно передавать изменения в репозиторий после добавления нового каталога [1]."


def test_a_yes_where_the_passage_says_no_is_asked_again_and_the_no_is_shown(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    """Issue 37 (BO014): the small model's «Да» over a passage that says no; asked again from the
    passage alone, it says the passage's no in its own words."""
    index(user_id, "cervisia.pdf", ADDING)
    local.judge = 0.9
    local.script(text(YES), text("Нет, добавление каталога не требует передачи [1]."))
    answer = ask_chat(FOLDER_COMMIT, user_id)
    assert len(local.requests) == 2 and answer.reasked and not answer.fallback
    assert answer.text.startswith("Нет, добавление каталога не требует передачи") and "Да, нужно" not in answer.text


@pytest.mark.parametrize("judged", [0.9, 0.6])
def test_a_yes_where_the_passage_says_no_twice_gives_way_to_the_passage(
        store: str, local: ScriptedLLM, user_id: int, judged: float) -> None:
    """A draft that contradicts its quote is replaced by the quote under an honest lead (issue 37): the
    passage answers, with its no, however doubtful the judgment (BW016, 0.7, had «не нашёл» above it)."""
    index(user_id, "cervisia.pdf", ADDING)
    local.judge = judged
    local.script(text(YES), text(YES))
    answer = ask_chat(FOLDER_COMMIT, user_id)
    assert answer.fallback and "contradicts" in answer.degenerate and not answer.reasked
    assert answer.text.startswith(EXTRACT_LEAD) and "не требует передачи" in answer.text
    assert "Да, нужно" not in answer.text and re.search(r"cervisia\.pdf, с\. 1\b", sources(answer.text))


# Déjà Dup's help (set BM) never says whether a failed backup is notified.
BACKUPS = ["Déjà Dup — простой инструмент резервного копирования. Он скрывает сложность резервного копирования.",
           "Место хранения — это место, куда Déjà Dup будет помещать копии ваших файлов, чтобы их можно было позже "
           "восстановить.",
           "Тогда вам нужно использовать утилиту командной строки duplicity, которая используется в Déjà Dup для "
           "резервного копирования и восстановления файлов.",
           "Когда вам действительно нужно вернуть свои данные, ошибка — это последнее, чего вы хотите.",
           "Уведомление напомнит о резервном копировании, если его давно не было."]
NOTIFY = "Отправляет ли Déjà Dup уведомление, если резервное копирование завершилось с ошибкой?"
BARE_YES = "Да, Déjà Dup отправляет уведомление о завершении резервного копирования с ошибкой."


def test_a_yes_that_only_says_the_question_back_gives_way_to_the_nearest_passages(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    """Issue 37 (BMU07): «Да» and the question, where no passage says so; asked again, the same. The
    judgment let the draft through (0.66), short of leading the passages as the answer (0.7)."""
    index(user_id, "deja-dup.docx", BACKUPS)
    local.judge = 0.66
    local.script(text(BARE_YES), text(BARE_YES))
    answer = ask_chat(NOTIFY, user_id)
    assert answer.fallback and "unbacked_yes" in answer.degenerate
    assert BARE_YES not in answer.text and answer.text.startswith(NEAREST_LEAD)


# --------------------------------------------------------------------------- a plan's answer, local model

PLAN = json.dumps({"steps": [
    {"id": "s1", "action": "search", "params": {"query": "подкормка малины весной"}, "depends_on": []},
    {"id": "final", "action": "synthesize", "params": {}, "depends_on": ["s1"]}]}, ensure_ascii=False)


def planner(synthesis: str):  # type: ignore[no-untyped-def]
    """Scripted local model: the question's kind, the plan, then the synthesis."""
    def answer(body: dict[str, Any]) -> Response:
        system = body["messages"][0]["content"]
        if system.startswith("Определи тип вопроса"):
            return text("diagnostic")(body)
        return text(PLAN if system.startswith("Составь план") else synthesis)(body)
    return answer


def test_a_local_plans_answer_is_checked_and_quoted_like_any_local_answer(
        store: str, local: ScriptedLLM, user_id: int) -> None:
    index(user_id, "малина.pdf", RASPBERRY)
    question = "Почему малина не растёт весной и чем её подкормить?"
    local.default = planner("Весной малину подкармливают азотом [1].")
    answer = ask_chat(question, user_id)
    assert "plan:diagnostic" in answer.signals and answer.quoted and not answer.fallback
    body = answer.text.partition("Информация взята из:")[0]
    assert body.startswith("Весной малину подкармливают азотом") and f"{QUOTE_LEAD}\n> «{RASPBERRY[0]}" in body
    assert "малина.pdf, с. 1" in sources(answer.text)
    # A synthesis that runs on and on, copying its materials, is not shown: the passages are.
    local.default = planner("Весной малину подкармливают. " + "(pdf: малина.pdf, с. 1): " + RASPBERRY[0] * 30)
    answer = ask_chat(question, user_id)
    assert answer.fallback and "too_long" in answer.degenerate
    assert answer.text.startswith(EXTRACT_LEAD) and "малина.pdf, с. 1" in sources(answer.text)
