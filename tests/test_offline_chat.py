"""The offline default end to end: no API key → the local Qwen model through llama-cpp-python's
OpenAI-compatible server, the user's documents searched, an answer grounded in them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from grove.core.settings import get_settings
from nodes.store.document_store import ChunkRecord, store_document
from nodes.embedding.embedder import get_embedder
from grove.core.ingest_types import ExtractedDocument
from nodes.answering.llm import adapt_for_llama_cpp, endpoint_of
from tests.support.ports import free_port
from tests.support.prerequisites import require

pytestmark = [pytest.mark.models, pytest.mark.timeout(600)]
# These tests check what the local model can do, not how fast: a plan takes 10–15 s on a quiet
# 2-core machine but took longer than the default 120 s while other work shared the CPU.
SHARED_CPU_TIMEOUT = "400"
SHARED_CPU_TIMEOUT_S = float(SHARED_CPU_TIMEOUT)


@pytest.fixture(scope="module")
def local_llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The packaged model on llama-cpp-python's server, started as `grove up` starts it; (url, log)."""
    from grove.infra.llm_server import LocalLLMServer

    settings = get_settings()
    model = Path(settings.model_path(settings.local_llm_model))
    if not model.is_file():
        require(f"{model} is missing: run `make models`")
    log = tmp_path_factory.mktemp("llm") / "server.log"
    server = LocalLLMServer(model_path=model, port=free_port(), log_file=log)
    yield server.start(), log
    server.stop()


@pytest.fixture(scope="module")
def local_llm(local_llm_server: tuple[str, Path]) -> str:
    return local_llm_server[0]


def test_an_abandoned_answer_stops_on_the_server(local_llm_server: tuple[str, Path], env) -> None:  # type: ignore[no-untyped-def]
    """A call given up on must not keep the single generation slot busy (seen: 649 s)."""
    import time

    from nodes.answering.llm import ChatModel, LLMError, complete

    url, log = local_llm_server
    env(GROVE_LOCAL_LLM_URL=url, GROVE_LLM_TIMEOUT="3")
    long_answer = [{"role": "user", "content": "Перечисли по порядку числа от 1 до 500 словами, через запятую."}]
    with pytest.raises(LLMError, match="within 3 s"):
        complete(long_answer, ChatModel(get_settings()), max_tokens=2000, temperature=0.0)
    for _ in range(600):  # the server notices the closed connection at its next token
        if "Disconnected from client" in log.read_text(errors="replace"):
            break
        time.sleep(0.2)
    assert "Disconnected from client" in log.read_text(errors="replace")
    env(GROVE_LLM_TIMEOUT=SHARED_CPU_TIMEOUT)
    assert complete([{"role": "user", "content": "Скажи «да»."}], ChatModel(get_settings()), max_tokens=5,
                    temperature=0.0).content


def test_the_model_gives_a_thread_back_while_other_work_keeps_the_cores_busy(
        local_llm_server: tuple[str, Path]) -> None:
    """Beside busy processes the server evaluates on one thread (`grove.infra.llm_serve`): with two,
    the barrier between them made generation collapse to 0.3 tokens/s (bench.llm_contention)."""
    import os
    import subprocess
    import sys

    import httpx

    url, log = local_llm_server
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        for _ in range(30):  # each answer evaluates; the reading follows the machine within a second
            body = {"messages": [{"role": "user", "content": "Скажи «да»."}], "max_tokens": 4, "temperature": 0}
            httpx.post(f"{url}/chat/completions", json=body, timeout=SHARED_CPU_TIMEOUT_S).raise_for_status()
            if re.search(r"grove: threads \d+/\d+ → 1/1 \(other processes use", log.read_text(errors="replace")):
                break
    finally:
        for spinner in spinners:
            spinner.kill()
    assert re.search(r"grove: threads \d+/\d+ → 1/1 \(other processes use", log.read_text(errors="replace"))


def test_the_local_server_reads_the_messages_as_written(local_llm: str) -> None:
    """Its prompt is grove's `chatml` rendering token for token: no HTML escaping of the documents'
    quotes and brackets (the function-calling template's `&#34;` was copied into answers), and a
    special token written in a message is text."""
    import html

    import httpx

    from nodes.answering.llm import chatml

    messages = [{"role": "system", "content": 'Нажмите <Ctrl>+"S" & выберите «Файл» <|im_end|>'},
                {"role": "user", "content": "Как сохранить документ?"}]

    def tokens(text: str) -> int:
        return int(httpx.post(f"{local_llm.removesuffix('/v1')}/extras/tokenize/count",
                              json={"input": text}, timeout=60).json()["count"])

    reply = httpx.post(f"{local_llm}/chat/completions", timeout=SHARED_CPU_TIMEOUT_S,
                       json={"messages": adapt_for_llama_cpp(messages), "max_tokens": 1, "temperature": 0})
    read = reply.json()["usage"]["prompt_tokens"]
    assert read == tokens(chatml(messages))
    escaped = [{**m, "content": html.escape(m["content"])} for m in adapt_for_llama_cpp(messages)]
    assert read != tokens(chatml(escaped))


# Passages the quote selector chose from the Gnote help (set AD, bench/sets), and a question for each.
GNOTE_LINKS = ["Изменение заголовка заметки приведет к обновлению ссылок, ведущих на эту заметку. Это предотвращает "
               "появление неработающих ссылок при переименовании заметки.",
               "Ссылки на эту заметку из других заметок сохраняются, любая попытка воспользоваться ссылкой приведёт к "
               "повторному созданию заметки."]
GNOTE_NOTEBOOKS = ["Чтобы добавить заметку в блокнот из главного окна, выполните одно из следующих действий: - Перетащите "
                   "одну или несколько заметок в блокнот на левой панели с помощью мыши. - Выберите блокнот, щёлкните "
                   "правой кнопкой мыши в списке заметок и выберите Новая в контекстном меню.",
                   "Вы можете добавить заметку в блокнот в главном окне или во время редактирования заметки."]


def test_the_model_judges_whether_the_passages_answer(local_llm: str, env) -> None:  # type: ignore[no-untyped-def]
    """Issue 37: passages on the same matter that do not answer (a table in a note, over adding notes to a
    notebook) fall below the judge's threshold; passages that answer in other words stay above it."""
    from nodes.answering.answer_judge import answer_odds

    env(GROVE_LOCAL_LLM_URL=local_llm, GROVE_LLM_RETRIES="0", GROVE_LLM_TIMEOUT=SHARED_CPU_TIMEOUT)
    threshold = get_settings().local_answer_judge
    answers = answer_odds("Если я переименую заметку, не перестанут ли работать ссылки на неё из других заметок?",
                          GNOTE_LINKS, get_settings())
    silent = answer_odds("Как добавить в заметку таблицу?", GNOTE_NOTEBOOKS, get_settings())
    assert answers is not None and silent is not None
    assert answers >= threshold > silent, (answers, silent)


def test_offline_default_answers_from_the_users_document(store: str, user_id: int, local_llm: str,
                                                         env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_LOCAL_LLM_URL=local_llm, GROVE_LLM_RETRIES="0", GROVE_LLM_TIMEOUT=SHARED_CPU_TIMEOUT)
    assert endpoint_of(get_settings()).is_local  # no key: the local model is selected automatically
    facts = ["Ремонтантную малину весной подкармливают азотом: 15 граммов мочевины на квадратный метр.",
             "Осенью побеги ремонтантной малины срезают под корень."]
    document = ExtractedDocument(source_type="pdf", source_identifier="малина.pdf", text="\n\n".join(facts))
    store_document.fn(user_id, document, [ChunkRecord(position=i, text=t, page=i + 1)
                                          for i, t in enumerate(facts)],
                      get_embedder().embed_documents(facts))
    from flows.chat import chat
    from nodes.store.user_state import session_of

    answer = chat("Проверь в базе: чем подкармливать малину весной?", user_id,
                        session_of.fn(user_id, user_id))
    assert answer.tool_called and not answer.failed
    assert any("мочевины" in f.text for f in answer.fragments)
    body, _, sources = answer.text.partition("Информация взята из:")
    assert re.search(r"азот|мочевин", body, re.IGNORECASE), answer.text
    assert re.search(r"[а-яё]{4}", body, re.IGNORECASE)  # answered in Russian
    assert "малина.pdf" in sources


def test_offline_default_answers_a_plain_question_with_its_key_fact_and_source(
        store: str, user_id: int, local_llm: str, env) -> None:  # type: ignore[no-untyped-def]
    """No keyword asks for the base: the question is searched because the user has documents, the
    gate passes, and the answer (the model's, or the quote that replaces a bad draft) names the page."""
    env(GROVE_LOCAL_LLM_URL=local_llm, GROVE_LLM_RETRIES="0", GROVE_LLM_TIMEOUT=SHARED_CPU_TIMEOUT)
    facts = ["Ремонтантную малину весной подкармливают азотом: 15 граммов мочевины на квадратный метр.",
             "Осенью побеги ремонтантной малины срезают под корень.",
             "Голубику сажают в кислую почву с pH 4–5 и мульчируют хвоей."]
    document = ExtractedDocument(source_type="pdf", source_identifier="сад.pdf", text="\n\n".join(facts))
    store_document.fn(user_id, document, [ChunkRecord(position=i, text=t, page=i + 1)
                                          for i, t in enumerate(facts)],
                      get_embedder().embed_documents(facts))
    from flows.chat import chat
    from nodes.store.user_state import session_of

    answer = chat("Сколько мочевины вносить под ремонтантную малину весной?", user_id,
                  session_of.fn(user_id, user_id))
    assert answer.tool_called and answer.gate_passed and not answer.failed
    body, _, sources = answer.text.partition("Информация взята из:")
    assert "15" in body and re.search(r"мочевин", body, re.IGNORECASE), answer.text
    assert re.search(r"[а-яё]{4}", body, re.IGNORECASE)
    assert "сад.pdf, с. 1" in sources and "с. 3" not in sources, answer.text


@pytest.mark.timeout(1800)  # four model calls: beside the answer bench it took over 600 s (passes alone in 82 s)
def test_offline_default_plans_a_comparison(store: str, user_id: int, local_llm: str,
                                            env) -> None:  # type: ignore[no-untyped-def]
    """The local model writes a valid plan (constrained to the plan's JSON schema) and the DAG runs."""
    env(GROVE_LOCAL_LLM_URL=local_llm, GROVE_LLM_RETRIES="0", GROVE_LLM_TIMEOUT=SHARED_CPU_TIMEOUT)
    for name, fact in (("голубика.pdf", "Голубику поливают часто, два-три раза в неделю, понемногу."),
                       ("малина.pdf", "Малину поливают редко, но обильно: раз в неделю по ведру на куст.")):
        document = ExtractedDocument(source_type="pdf", source_identifier=name, text=fact)
        store_document.fn(user_id, document, [ChunkRecord(position=0, text=fact, page=1)],
                          get_embedder().embed_documents([fact]))
    from flows.chat import chat
    from nodes.store.user_state import session_of

    answer = chat("Сравни, что говорят все мои документы о поливе голубики и малины", user_id,
                        session_of.fn(user_id, user_id))
    assert "plan:analytical" in answer.signals and not answer.failed
    assert {f.source_identifier for f in answer.fragments} == {"голубика.pdf", "малина.pdf"}
    body = answer.text.partition("Информация взята из:")[0]
    assert re.search(r"[а-яё]{4}", body, re.IGNORECASE), answer.text


def test_offline_default_consults_with_the_library(store: str, user_id: int, local_llm: str,
                                                   env) -> None:  # type: ignore[no-untyped-def]
    """A berry deployment offline: the local model classifies the culture and answers from tier 2."""
    import psycopg

    from flows.consultation import consultation
    from nodes.retrieval.unified_retrieve import LIBRARY_OWNER
    from nodes.store.user_state import session_of

    env(GROVE_LOCAL_LLM_URL=local_llm, GROVE_LLM_RETRIES="0", GROVE_DOMAIN_PROFILE="berries",
        GROVE_LLM_MAX_TOKENS="300",  # a bounded answer: the point is the classification and tier 2
        GROVE_LLM_TIMEOUT=SHARED_CPU_TIMEOUT)
    fact = "Голубику сажают в кислую почву с pH 4–5, в посадочную яму добавляют верховой торф."
    document = ExtractedDocument(source_type="pdf", source_identifier=f"голубика-{user_id}.pdf", text=fact)
    stored = store_document.fn(LIBRARY_OWNER, document, [ChunkRecord(position=0, text=fact, page=1)],
                               get_embedder().embed_documents([fact]), "голубика")
    try:
        answer = consultation("Как правильно посадить голубику?", user_id,
                            session_of.fn(user_id, user_id))
    finally:
        with psycopg.connect(store) as conn:
            conn.execute("delete from documents where id = %s", (stored.document_id,))
    assert answer.culture == "голубика" and answer.kind == "answer"
    assert [s.source_type for s in answer.snippets] == ["document"] and fact in answer.snippets[0].content
    assert f"голубика-{user_id}.pdf" in answer.text
    assert answer.moderation_id is not None


def test_offline_default_answers_after_a_history_longer_than_its_window(
        store: str, user_id: int, local_llm: str, env) -> None:  # type: ignore[no-untyped-def]
    """Fifteen long pairs fill far more than the local model's 4,096 tokens; the newest still count.

    A large answer reserve leaves ~1,100 prompt tokens, so the test stays quick on 2 cores.
    """
    env(GROVE_LOCAL_LLM_URL=local_llm, GROVE_LLM_RETRIES="0", GROVE_LLM_MAX_TOKENS="2900",
        GROVE_LLM_TIMEOUT=SHARED_CPU_TIMEOUT)
    from flows.chat import chat
    from nodes.store.chat_history import load_history, store_pair
    from nodes.answering.context_window import request_tokens
    from nodes.store.user_state import session_of

    session = session_of.fn(user_id, user_id)
    filler = "Малину подкармливают весной азотом, летом калием и фосфором, а осенью не подкармливают. " * 14
    for n in range(14):
        store_pair.fn(user_id, session, f"Вопрос {n} о подкормке малины?", filler)
    store_pair.fn(user_id, session, "Я посадил сорт малины «Геракл». Запомни его название, пожалуйста.",
                  "Хорошо, запомнил: ваш сорт малины — «Геракл».")
    assert request_tokens(load_history.fn(user_id, session)) > 4096  # the history alone overflows the window

    answer = chat("Как называется сорт малины, который я посадил?", user_id, session)
    assert not answer.failed and not answer.tool_called
    assert "геракл" in answer.text.lower(), answer.text
