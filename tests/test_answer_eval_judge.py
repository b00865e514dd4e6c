"""bench/answer_eval.py's judge, on replies written by hand: own words, a refusal over the answer,
and the verdicts on questions the documents do not answer (issue 37's rules, fixed before any answer)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.answer_eval import judge, leads_with_refusal, split_reply
from bench.eval_stores import SETS_DIR, EvalSet, Judge, Question, load_needle_set, normalise, verify_frozen_sets

ANSWERABLE = Question("F020", "Когда сужаю панель, содержимое колонки «Размер» заезжает на «Дату». Что включить?",
                      needles=[normalise('отметьте "Обрезать текст по ширине колонки"')])
SILENT = Question("FU13", "Как отправить выделенные файлы по электронной почте прямо из файлового менеджера?",
                  answerable=False)
PASSAGE = ('В: При изменении размеров панелей колонка "Размер" налазит на колонку "Дата". О: Настройки > '
           'Параметры... > Список файлов > Колонки, отметьте "Обрезать текст по ширине колонки".')
SOURCES = "Информация взята из:\n• faq.docx"


def reply(text: str, fragments: list[str] | None = None) -> dict[str, Any]:
    fragments = [PASSAGE] if fragments is None else fragments
    return {"text": text, "labels": ["faq.docx"] * len(fragments), "seconds": 1.0,
            "fragments": [{"text": f, "source_identifier": "/docs/faq.docx"} for f in fragments]}


def verdict(question: Question, text: str, fragments: list[str] | None = None) -> Any:
    evalset = EvalSet("doublecmd", [], [question])
    return judge(reply(text, fragments), question, evalset, Judge(evalset))


# --------------------------------------------------------------------------- splitting


def test_split_reply_takes_own_words_passages_and_sources_apart() -> None:
    parts = split_reply(f"Включите флажок «Обрезать текст по ширине колонки».\n\nИз документа:\n«{PASSAGE}»\n\n{SOURCES}")
    assert parts.own == "Включите флажок «Обрезать текст по ширине колонки»."
    assert parts.label == "Из документа:"
    assert parts.passages.startswith("«В: При изменении")
    assert parts.sources == SOURCES


def test_split_reply_finds_a_quote_wrapped_in_an_expandable_blockquote() -> None:
    parts = split_reply("Зайдите в настройки колонок.\n\nИз документа:\n<blockquote expandable>«"
                        f"{PASSAGE}»</blockquote>\n\n{SOURCES}")
    assert parts.own == "Зайдите в настройки колонок."
    assert parts.label == "Из документа:" and "Обрезать текст" in parts.passages and "<" not in parts.passages
    bare = split_reply(f"Зайдите в настройки колонок.\n<blockquote expandable>«{PASSAGE}»</blockquote>")
    assert bare.own == "Зайдите в настройки колонок." and bare.label == "" and "Обрезать текст" in bare.passages


def test_a_reply_without_passages_is_all_own_words() -> None:
    parts = split_reply(f"Отметьте <b>«Обрезать текст по ширине колонки»</b>.\n\n{SOURCES}")
    assert parts.own == "Отметьте «Обрезать текст по ширине колонки»." and parts.passages == "" and parts.label == ""


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("text", [
    "Прямого ответа в документах не нашёл. Ближе всего к вопросу вот это:",
    "Не нашёл ответа на этот вопрос в ваших документах, а уверенно ответить сам не могу.",
    "В документах об этом не сказано.",
    "В ваших документах нет информации об отправке почты.",
    "Об этом в руководстве не упоминается.\nНо можно попробовать так.",
    "Этого нет в документах.",
    "Не могу уверенно ответить на этот вопрос.",
])
def test_a_not_found_lead_is_a_refusal(text: str) -> None:
    assert leads_with_refusal(text)


@pytest.mark.parametrize("text", [
    "Выходные файлы MetaPost не содержат шрифтов, пока prologues равно 0.",
    "В выходных файлах нет шрифтов. Установите prologues:=3.",
    "Откройте Настройки > Параметры... > Список файлов > Колонки. Если флажка нет в документах — обновите программу.",
    "",
])
def test_an_answer_is_not_a_refusal(text: str) -> None:
    assert not leads_with_refusal(text)


# --------------------------------------------------------------------------- answerable


def test_the_fact_in_the_models_own_words_counts_as_own_words() -> None:
    v = verdict(ANSWERABLE, "В настройках колонок отметьте \"Обрезать текст по ширине колонки\" — и содержимое "
                            f"перестанет наезжать.\n\nИз документа:\n«{PASSAGE}»\n\n{SOURCES}")
    assert v.correct_and_cited and v.own_words and not v.refusal_with_answer


def test_the_fact_only_in_the_quote_is_not_own_words() -> None:
    """The case that must fail: the model's words are vague, only the quote holds the fact."""
    v = verdict(ANSWERABLE, f"Это можно исправить в настройках программы.\n\nИз документа:\n«{PASSAGE}»\n\n{SOURCES}")
    assert v.fact and v.cited and v.correct_and_cited
    assert not v.own_words and not v.refusal_with_answer


KEYED = Question("AG013", "Через сколько секунд тишины во вкладке срабатывает слежение за неактивностью?",
                 needles=[normalise("По умолчанию после 10 секунд неактивности во вкладке сеанса появится "
                                    "информационный значок.")], facts=["10 секунд"])
KEYED_PASSAGE = ("По умолчанию после 10 секунд неактивности во вкладке сеанса появится информационный значок. "
                 "Тип уведомлений возможно настроить.")


def test_a_short_answer_with_the_key_fact_is_own_words_where_the_set_names_it() -> None:
    """«10 секунд.» holds the fact though it shares few words with the needle's whole sentence."""
    text = f"10 секунд.\n\nИз документа:\n«{KEYED_PASSAGE}»\n\n{SOURCES}"
    assert verdict(KEYED, text, [KEYED_PASSAGE]).own_words
    bare = Question(KEYED.id, KEYED.text, needles=KEYED.needles)
    assert not verdict(bare, text, [KEYED_PASSAGE]).own_words


def test_own_words_without_the_key_fact_are_not_counted_where_the_set_names_it() -> None:
    text = f"Через несколько секунд появится значок.\n\nИз документа:\n«{KEYED_PASSAGE}»\n\n{SOURCES}"
    v = verdict(KEYED, text, [KEYED_PASSAGE])
    assert v.fact and not v.own_words



NEGATED = Question("BF010", "Поддерживает ли Knights разновидности шахмат, например шахматы Фишера или Crazyhouse?",
                   needles=[normalise("Knights их не поддерживает")], facts=["Knights их не поддерживает"])
NEGATED_PASSAGE = ("Существуют и другие разновидности шахмат, например шахматы Фишера. Knights их не поддерживает.")


@pytest.mark.parametrize(("own", "stated"), [
    ("Да, Knights поддерживает разновидности шахмат.", False),  # every term of the fact, the opposite said
    ("Нет, разновидности шахмат Knights не поддерживает.", True),
])
def test_a_fact_with_a_negation_is_stated_only_by_words_that_negate(own: str, stated: bool) -> None:
    v = verdict(NEGATED, f"{own}\n\nИз документа:\n«{NEGATED_PASSAGE}»\n\n{SOURCES}", [NEGATED_PASSAGE])
    assert v.own_words is stated


def test_a_fact_said_plainly_is_not_stated_by_words_that_negate_it() -> None:
    text = f"Значок не появится.\n\nИз документа:\n«{KEYED_PASSAGE}»\n\n{SOURCES}"
    plain = Question(KEYED.id, KEYED.text, needles=KEYED.needles, facts=["появится значок"])
    assert not verdict(plain, text, [KEYED_PASSAGE]).own_words
    said = f"Появится значок.\n\nИз документа:\n«{KEYED_PASSAGE}»\n\n{SOURCES}"
    assert verdict(plain, said, [KEYED_PASSAGE]).own_words

def test_a_refusal_over_a_passage_that_answers_is_counted() -> None:
    v = verdict(ANSWERABLE, "Прямого ответа в документах не нашёл. Ближе всего к вопросу вот это:\n"
                            f"«{PASSAGE}»\n\n{SOURCES}")
    assert v.refusal_with_answer and not v.own_words


def test_a_refusal_over_passages_without_the_answer_is_only_a_miss() -> None:
    v = verdict(ANSWERABLE, "Прямого ответа в документах не нашёл. Ближе всего к вопросу вот это:\n"
                            "«Показывает имена колонок.»\n\n" + SOURCES, ["Показывает имена колонок."])
    assert not v.refusal_with_answer and not v.fact and not v.correct_and_cited


# --------------------------------------------------------------------------- unanswerable


def test_not_found_without_passages_is_honest() -> None:
    v = verdict(SILENT, "Не нашёл ответа на этот вопрос в ваших документах, а уверенно ответить сам не могу. "
                        "Попробуйте переформулировать вопрос.", [])
    assert v.honest and not v.invented and not v.passage_as_answer and not v.correct_and_cited


def test_nearest_passages_labelled_as_such_are_honest() -> None:
    v = verdict(SILENT, "Прямого ответа в документах не нашёл. Ближе всего к вопросу вот это:\n"
                        f"<blockquote expandable>«{PASSAGE}»</blockquote>\n\n{SOURCES}")
    assert v.honest and not v.passage_as_answer and not v.invented


def test_a_passage_presented_as_the_answer_is_not_honest() -> None:
    v = verdict(SILENT, f"В ваших документах об этом сказано так:\n«{PASSAGE}»\n\n{SOURCES}")
    assert v.passage_as_answer and not v.honest and not v.invented


def test_a_refusal_with_a_quote_under_it_as_backing_is_not_honest() -> None:
    v = verdict(SILENT, f"В документах об этом не сказано.\n\nИз документа:\n«{PASSAGE}»\n\n{SOURCES}")
    assert v.passage_as_answer and not v.honest and not v.invented


def test_an_answer_from_the_models_own_knowledge_is_invented() -> None:
    v = verdict(SILENT, "Выделите файлы и выберите «Файлы > Отправить по почте», Double Commander откроет "
                        "почтовый клиент с вложениями.", [])
    assert v.invented and not v.honest and not v.passage_as_answer


# --------------------------------------------------------------------------- the frozen sets


def test_the_frozen_sets_and_the_docx_set_load_with_their_silent_questions() -> None:
    verify_frozen_sets()
    doublecmd = load_needle_set("doublecmd_docx_ru.json", "doublecmd", "doublecmd_docx_silent_ru.json")
    assert len(doublecmd.questions) == 40 and all(q.answerable and q.needles for q in doublecmd.questions)
    assert len(doublecmd.silent) == 15 and all(not q.answerable and not q.needles for q in doublecmd.silent)
    assert all(doc.path.is_relative_to(SETS_DIR / "docs") and doc.kind == "file" for doc in doublecmd.docs)
