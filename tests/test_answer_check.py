"""The answer checks of nodes/answering/answer_check.py, unit by unit: no model, no database, no embeddings.

Degenerate drafts (loops, another language, empty, too long, a refusal over a matching
fragment), the extractive fallback, citations checked against the fragments' words, and the
unfinished last sentence of a draft cut by the token limit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from grove.core.settings import get_settings

import nodes.answering.answer_check
import nodes.answering.quote
from nodes.answering.answer_check import (
    CANNOT_ANSWER,
    EXTRACT_LEAD,
    NOT_FOUND,
    Draft,
    check_answer,
    check_citations,
    complete_sentences,
    covers,
    degenerate,
    extractive_answer,
    is_refusal,
    sources_by_overlap,
)
from nodes.answering.quote import NEAREST_LEAD

RASPBERRY = [
    "Ремонтантную малину весной подкармливают азотом: 15 г мочевины на квадратный метр.",
    "Летом малине нужен калий и фосфор, азот после июля не вносят.",
    "Осенью побеги ремонтантной малины срезают под корень, а летнюю малину обрезают после плодоношения.",
]
SPRING = "Чем подкормить малину весной?"
FIXTURES = Path(__file__).parent / "fixtures"
GOOD = "Весной малину подкармливают азотом: 15 г мочевины на квадратный метр [1]."


@pytest.fixture
def lexical_quotes(env, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """The extractive fallback chooses, and `covers` decides, by words only: meaning would load the
    embedder (the meaning side of `covers` has tests of its own below)."""
    env(GROVE_QUOTE_SELECTOR="ranked")
    monkeypatch.setattr(nodes.answering.answer_check, "MEANING_FLOOR_COVERAGE", 1.01)

    def no_embedder(question: str, texts: object) -> list[float]:
        raise AssertionError("the embedding model must not be loaded in a unit test")

    monkeypatch.setattr(nodes.answering.quote, "embedded_similarity", no_embedder)
    yield


def failed(text: str, question: str = SPRING, fragments: list[str] | None = None,
           max_chars: int | None = None, strict: bool = True) -> list[str]:
    return degenerate(Draft(text, question, RASPBERRY if fragments is None else fragments, max_chars, strict))


# --------------------------------------------------------------------------- degenerate drafts


def test_a_sound_draft_passes_every_check() -> None:
    assert failed(GOOD, max_chars=1500) == []
    assert Draft(GOOD, SPRING).body == "Весной малину подкармливают азотом: 15 г мочевины на квадратный метр."


@pytest.mark.parametrize(("text", "expected"), [
    ("", ["empty"]),
    ("   \n", ["empty"]),
    ("…!?", ["empty"]),
    ("[4]", ["empty", "bare_citations"]),
    (" [1] [2] ", ["empty", "bare_citations"]),
])
def test_a_draft_without_words_is_empty(text: str, expected: list[str]) -> None:
    assert failed(text) == expected


ARCHIVE = ("Допустим, был установлен лимит в 500 статей, имеется 510 неотмеченных и 50 отмеченных статей. "
           "Akregator будет игнорировать эти 50 статей и удалит 10 из неотмеченных. Так, в данном примере останется "
           "550 статей.")
LIMIT = "Стоит лимит 500 статей, у меня 510 обычных и 50 отмеченных. Сколько статей останется?"


def test_a_number_of_the_fragments_alone_is_an_answer() -> None:
    """«550.» computes nothing of its own: the passage says it, and the question does not (set AH)."""
    assert failed("550.", LIMIT, [ARCHIVE]) == []


@pytest.mark.parametrize("text", ["500.", "42", "—"])
def test_a_number_the_question_gave_or_no_fragment_holds_is_empty(text: str) -> None:
    assert failed(text, LIMIT, [ARCHIVE]) == ["empty"]


SAVE_OUTPUT = ("Файл → Сохранить вывод в файле... (Ctrl+Shift+S) Сохраняет текущий журнал вывода как текстовый файл "
               "или документ HTML")
SAVE = "Можно ли сохранить всё, что накопилось в окне терминала, в файл?"


def test_a_sentence_carrying_the_fragments_key_in_its_own_framing_is_backed() -> None:
    """The passage's key said «с помощью команды» (set AG, AG009): no lemma overlap, the fact the passage's."""
    draft = Draft("Да, можно. Вы можете сохранить всё, что накопилось в окне терминала, в файл с помощью "
                  "команды `Ctrl+Shift+S`.", SAVE, [SAVE_OUTPUT], strict=True)
    assert "unsupported" not in degenerate(draft)


def test_a_sentence_whose_key_no_fragment_has_is_still_unsupported() -> None:
    draft = Draft("Да, можно. Вы можете сохранить всё в файл с помощью команды `Ctrl+Shift+Q` и утилиты script.",
                  SAVE, [SAVE_OUTPUT], strict=True)
    assert "unsupported" in degenerate(draft)


@pytest.mark.parametrize("text", ["См. [4]", "Ответ: [1] и [2]"])
def test_markers_with_a_word_or_two_are_bare_citations(text: str) -> None:
    assert failed(text) == ["bare_citations"]


@pytest.mark.parametrize("text", [
    "Весной малину подкармливают азотом. " * 3,  # a short sentence three times
    ("Весной малину подкармливают азотом, а летом малине нужен калий и фосфор. " * 2),  # a long one twice
    "Весной подкормка нужна нужна нужна нужна нужна всегда.",  # a stuck word
    "малину подкармливают весной азотом, " * 12,  # one sentence, few distinct 4-grams
])
def test_a_loop_is_repetition(text: str) -> None:
    assert "repetition" in failed(text)


@pytest.mark.parametrize("text", [
    "Весной малину подкармливают азотом. " * 2,  # a short sentence may be said twice
    "Весной малину подкармливают азотом, а летом малине нужен калий и фосфор.",
    "Весной подкормка нужна нужна нужна нужна всегда.",  # four in a row is not yet stuck
])
def test_what_is_not_a_loop(text: str) -> None:
    assert "repetition" not in failed(text)


def test_another_script_or_an_english_answer_is_not_russian() -> None:
    assert failed("Весной малину подкармливают 这是 азотом.") == ["not_russian"]
    english = "Run sudo apt update and then sudo apt upgrade to get the newest packages installed."
    assert failed(english, "Как обновить Debian?", []) == ["not_russian"]


def test_latin_words_the_fragments_use_are_not_a_foreign_language() -> None:
    fragment = "Обновление: sudo apt update && sudo apt upgrade, затем sudo reboot now please."
    draft = ("Чтобы обновить систему, выполните sudo apt update && sudo apt upgrade, затем перезагрузите "
             "компьютер командой sudo reboot now please.")
    assert failed(draft, "Как обновить Debian?", [fragment]) == []


def test_a_draft_the_fragments_do_not_support_is_off_topic() -> None:
    assert "off_topic" in failed("Котлеты жарят на сковороде с луком, чесноком и перцем до золотистой корочки.")


def test_without_fragments_only_a_long_unrelated_draft_is_off_topic() -> None:
    short = "Котлеты жарят на сковороде с луком, чесноком и перцем."
    long = ("Кошки любят спать на солнце целый день, а собаки предпочитают гулять в парке с хозяевами, "
            "играть с мячом до вечера и потом долго отдыхать на мягком диване у окна.")
    assert failed(short, "Как обрезать малину?", []) == []
    assert failed(long, "Как обрезать малину?", []) == ["off_topic"]


def test_the_question_said_back_is_an_echo() -> None:
    assert failed("Чем подкормить малину весной?") == ["echo"]


def test_length_is_measured_without_citation_markers() -> None:
    body = "Весной малину подкармливают азотом."
    assert failed(body, max_chars=len(body) - 1) == ["too_long"]
    assert failed(body + " [1]" * 10, max_chars=len(body)) == []


def test_a_refusal_over_a_fragment_that_answers_is_refused() -> None:
    refusal = "В ваших документах об этом не сказано."
    assert failed(refusal) == ["refused"]
    assert failed(refusal, fragments=[]) == []  # nothing shown: the refusal may well be true


def gimp_refusal(question_id: str) -> dict:  # type: ignore[type-arg]
    """A question of the GIMP sets with the four fragments the production search returned for it."""
    cases = json.loads((FIXTURES / "gimp-refusals-ru.json").read_text(encoding="utf-8"))["questions"]
    return next(c for c in cases if c["id"] == question_id)


def test_a_refusal_over_the_manuals_answering_sentence_is_refused() -> None:
    # «Динамики создаются для использования с графическими планшетами, но некоторые доступны и для
    # мыши» holds 0.44 of the question's weighted terms: the refusal stood at 0.5.
    case = gimp_refusal("B024")
    assert failed("В ваших документах об этом не сказано.", case["question"], case["fragments"]) == ["refused"]


def test_a_refusal_of_a_question_the_manual_does_not_answer_stands() -> None:
    case = gimp_refusal("GU15")  # a drop shadow: the manual's nearest sentences are about other things
    assert not case["answerable"]
    assert failed("В ваших документах об этом не сказано.", case["question"], case["fragments"]) == []


# The reply issue 37 read over a question about a game engine's manual, and answers that speak of
# errors without turning on the user.
SCOLDING = "Ваше сообщение содержит несколько ошибок и не соответствует правилам. Пожалуйста, исправьте его."


@pytest.mark.parametrize("text", [SCOLDING, "Ваш вопрос сформулирован неверно, уточните его.",
                                  "Ваш запрос не соответствует правилам сервиса.",
                                  # BFU08, over a chess manual asked what a rook is worth in pawns
                                  "Ваше задание не совсем корректно. Пешка стоит на одной клетке.",
                                  "Ваше сообщение содержит несколько ошибок и недоразумений. Вот исправленный "
                                  "вариант:\n\nКак быстро найти файлы, которых нет во второй панели?"])
def test_a_draft_that_scolds_the_user_is_caught(text: str) -> None:
    assert "scolds" in failed(text)


@pytest.mark.parametrize("text", [
    "Исправьте ошибку в строке 5 файла foo.mp и запустите MetaPost снова.",
    "Если ваш текст содержит ошибки, они подчёркиваются красной волнистой линией.",
    "Сообщение об ошибке означает, что файл не найден.",
    "Вот исправленный вариант строки: draw z0..z1 withpen pencircle.",
])
def test_an_answer_about_errors_is_not_scolding(text: str) -> None:
    assert "scolds" not in failed(text, fragments=[])


def test_a_scolding_draft_is_replaced_by_the_quote(lexical_quotes: None) -> None:
    checked = check_answer(SCOLDING, SPRING, RASPBERRY)
    assert checked.fallback and "scolds" in checked.degenerate
    assert checked.text.startswith(EXTRACT_LEAD) and "Ваше сообщение" not in checked.text


# The MetaPost user's manual as Debian ships it in Russian (mpman-ru.pdf, p. 5), and drafts over it.
PROLOGUES = ("Однако, с версии 1.000 MetaPost ситуация изменилась. С этой версии MetaPost способен производить "
             "самодостаточные файлы EPS, которые могут быть достоверно просмотрены в независимости от того, есть ли "
             "в них текст или нет. Новые возможности могут быть включены установкой внутренней переменной MetaPost "
             "prologues в 3.")
SELF_CONTAINED = "Как получить из MetaPost самодостаточный EPS, который правильно показывает текст?"


@pytest.mark.parametrize("draft", [
    'Добавьте в начало файла outputformat:="eps" и включите embedfonts [1].',  # names the manual never uses
    "Установите prologues в 2 и запускайте mpost -s [1].",  # an option it does not have
    "Запустите MetaPost с версии 2.000 и установите prologues в 3 [1].",  # a number it does not say
])
def test_a_draft_with_a_command_or_number_no_fragment_has_invents(draft: str) -> None:
    assert "invents" in failed(draft, SELF_CONTAINED, [PROLOGUES])


@pytest.mark.parametrize("draft", [
    "Установите внутреннюю переменную prologues в 3 [1].",
    "С версии 1.000 MetaPost делает самодостаточные EPS-файлы, если prologues равно 3.",
    "Нужно включить новые возможности переменной prologues.",
])
def test_a_draft_in_the_fragments_own_terms_does_not_invent(draft: str) -> None:
    assert "invents" not in failed(draft, SELF_CONTAINED, [PROLOGUES])


def test_without_fragments_nothing_is_called_invented() -> None:
    assert "invents" not in failed("Используйте outputformat:=\"svg\".", SELF_CONTAINED, [])


# The TeX Live 2021 guide in Russian (texlive-ru.pdf, p. 14), install-tl's -in-place option.
IN_PLACE = ("Учтите, что при этом база данных tlpkg/texlive.tlpdb может быть затерта; вы должны сохранить её сами. "
            "Кроме того, удаление пакетов нужно будет делать вручную. Эту опцию нельзя выбрать из интерфейса "
            "установщика.")


@pytest.mark.parametrize(("draft", "question", "fragment"), [
    ("Новые возможности не могут быть включены переменной MetaPost prologues [1].", SELF_CONTAINED, PROLOGUES),
    ("Опцию -in-place можно выбрать из интерфейса установщика [1].", "Где включить опцию -in-place?", IN_PLACE),
])
def test_a_draft_saying_the_opposite_of_its_fragment_negates(draft: str, question: str, fragment: str) -> None:
    assert "negates" in failed(draft, question, [fragment])


@pytest.mark.parametrize(("draft", "question", "fragment"), [
    ("Новые возможности включаются установкой переменной MetaPost prologues в 3 [1].", SELF_CONTAINED, PROLOGUES),
    ("Эту опцию нельзя выбрать из интерфейса установщика, а пакеты удалять придётся вручную [1].",
     "Где включить опцию -in-place?", IN_PLACE),
    ("Не забудьте сохранить базу данных tlpkg/texlive.tlpdb сами [1].", "Что будет с базой tlpdb?", IN_PLACE),
])
def test_a_draft_that_keeps_its_fragments_polarity_does_not(draft: str, question: str, fragment: str) -> None:
    assert "negates" not in failed(draft, question, [fragment])


DRAFTS = json.loads((FIXTURES / "doublecmd_drafts.json").read_text(encoding="utf-8"))["drafts"]


@pytest.mark.parametrize("case", DRAFTS, ids=[d["id"] for d in DRAFTS])
def test_a_draft_whose_sentences_no_fragment_backs_is_unsupported(case: dict[str, object]) -> None:
    """Autostart steps over passages on opening files (FU07) are the model's own; the answers
    (F005, F013, F025), steps and all, say what their fragments say."""
    draft = Draft(str(case["draft"]), str(case["question"]), list(case["fragments"]), strict=True)  # type: ignore[call-overload]
    assert ("unsupported" in degenerate(draft)) is (not case["answerable"])


def test_only_a_strict_check_asks_for_backed_sentences() -> None:
    [invented] = [d for d in DRAFTS if not d["answerable"]]
    assert "unsupported" not in degenerate(Draft(invented["draft"], invented["question"], invented["fragments"]))


KALARM = json.loads((FIXTURES / "kalarm_drafts.json").read_text(encoding="utf-8"))["drafts"]


@pytest.mark.parametrize("case", [*KALARM, *DRAFTS], ids=[d["id"] for d in [*KALARM, *DRAFTS]])
def test_a_draft_stating_the_questions_terms_that_no_fragment_holds_is_unfounded(
        case: dict[str, object], lexical_quotes: None) -> None:
    """«Включить тёмную тему оформления в KAlarm можно так: …» over a passage on starting at login (VU05),
    clock synchronisation over the time-zone box (VU10), autostart steps over passages on opening files
    (FU07); the answers in the model's own words over the passages that hold them (V005, V011, V017,
    F005, F013, F025) are kept."""
    draft = Draft(str(case["draft"]), str(case["question"]), list(case["fragments"]), strict=True)  # type: ignore[call-overload]
    assert ("unfounded" in degenerate(draft)) is (not case["answerable"])


def test_the_questions_terms_are_the_users_wording_when_the_judgment_is_sure(lexical_quotes: None) -> None:
    """Issue 37 (AU007): «Комп в локалке называется megan … Что написать в адресной строке KRDC?» answered «В
    адресной строке KRDC введите megan:1» over the passage that says so in other words; the question's terms
    no fragment holds («адресной», «строке») are the user's wording when the model is sure the passage
    answers, and a sign of a bent passage otherwise."""
    question = "Комп в локалке называется megan, VNC на нём висит на первом дисплее. Что написать в адресной строке KRDC?"
    passage = ("Если вы хотите подключиться к компьютеру megan, на котором сервер VNC работает на экране 1, "
               "введите megan:1 в поле Удалённая рабочая станция.")
    draft = "В адресной строке KRDC введите megan:1 [1]."
    assert "unfounded" in degenerate(Draft(draft, question, [passage], strict=True))
    assert "unfounded" not in degenerate(Draft(draft, question, [passage], strict=True, sure=True))
    assert check_answer(draft, question, [passage], strict=True, answered=True).fallback
    assert not check_answer(draft, question, [passage], strict=True, answered=True, sure=True).fallback


def test_the_questions_terms_a_fragment_holds_or_a_covering_fragment_are_founded(lexical_quotes: None) -> None:
    question = "Как перезимовать голубике на балконе?"
    draft = "Голубику на балконе перезимовать легко: укройте кусты лапником [1]."
    assert "unfounded" in failed(draft, question, RASPBERRY)
    # the same terms in a fragment: the draft repeats the documents, not the question
    assert "unfounded" not in failed(draft, question, [*RASPBERRY, "Голубика на балконе зимует под лапником."])
    # one term of the question alone is the user's wording, not a claim
    assert "unfounded" not in failed("Малину на балконе весной подкармливают азотом [1].", SPRING, RASPBERRY)
    assert "unfounded" not in failed(draft, question, RASPBERRY, strict=False)


def test_how_many_of_the_questions_terms_make_a_draft_unfounded_is_handed_in() -> None:
    """One term of the question («голубика») said of a passage about another plant: unfounded when the
    caller counts one (`GROVE_LOCAL_UNFOUNDED_TERMS=1`), the user's wording at the default two."""
    question, draft = "Как перезимовать голубике на балконе?", "Голубику обрезают осенью под корень [1]."
    assert check_answer(draft, question, RASPBERRY, strict=True, claimed_terms=1).fallback
    assert not check_answer(draft, question, RASPBERRY, strict=True).fallback


def test_only_a_strict_check_looks_for_invented_tokens() -> None:
    assert "invents" not in failed("Установите prologues в 2 и запускайте mpost -s [1].", SELF_CONTAINED,
                                   [PROLOGUES], strict=False)


@pytest.mark.parametrize(("text", "refusal"), [
    ("В ваших документах об этом не сказано.", True),
    ("Не нашёл ответа на этот вопрос [1].", True),
    ("Нет информации о подкормке голубики.", True),
    ("Весной малину подкармливают азотом.", False),
    ("Об этом не сказано прямо, но " + "малину весной подкармливают азотом и мочевиной, " * 6, False),
])
def test_is_refusal_only_for_a_short_refusal(text: str, refusal: bool) -> None:
    assert is_refusal(text) is refusal


# --------------------------------------------------------------------------- a draft cut by the token limit


def test_the_unfinished_last_sentence_goes() -> None:
    assert complete_sentences("Весной подкармливают азотом. Летом вносят калий и фос") == "Весной подкармливают азотом."
    assert complete_sentences("Азот вносят весной.\n\n- мочевина\n- селит") == "Азот вносят весной.\n\n- мочевина"


@pytest.mark.parametrize("text", [
    "Весной подкармливают азотом. Летом вносят калий.",
    "Азот вносят весной! Калий — летом…",
    "Азот вносят весной. Подробнее — в разделе «Подкормка»",
    "Весной подкармливают азот",  # a single sentence is kept: nothing would be left
])
def test_a_finished_draft_is_kept_whole(text: str) -> None:
    assert complete_sentences(text) == text


# --------------------------------------------------------------------------- citations


def test_a_citation_is_moved_to_the_fragment_that_says_it() -> None:
    checked = check_citations("Весной малину подкармливают азотом: 15 г мочевины на квадратный метр [2].", RASPBERRY)
    assert checked.text == GOOD
    assert (checked.used, checked.kept, checked.moved, checked.dropped) == ([1], 0, 1, 0)


def test_each_sentence_is_judged_on_its_own() -> None:
    checked = check_citations("Весной малину подкармливают азотом, мочевиной [2]. Летом вносят калий и фосфор [2].",
                              RASPBERRY)
    assert checked.text == "Весной малину подкармливают азотом, мочевиной [1]. Летом вносят калий и фосфор [2]."
    assert (checked.used, checked.kept, checked.moved) == ([1, 2], 1, 1)


def test_a_citation_out_of_range_is_dropped_with_its_punctuation_mended() -> None:
    checked = check_citations("Весной малину подкармливают азотом, см. [9].", RASPBERRY)
    assert checked.text == "Весной малину подкармливают азотом, см."  # not «см..»
    assert (checked.used, checked.dropped) == ([], 1)


def test_a_citation_no_fragment_supports_is_dropped() -> None:
    checked = check_citations("Котлеты жарят на сковороде с луком и чесноком до корочки [2].", RASPBERRY)
    assert checked.text == "Котлеты жарят на сковороде с луком и чесноком до корочки."
    assert (checked.used, checked.dropped) == ([], 1)


def test_citations_backing_a_sentence_together_are_kept() -> None:
    checked = check_citations("Весной азотом [1], а летом калием и фосфором [2].", RASPBERRY)
    assert checked.text == "Весной азотом [1], а летом калием и фосфором [2]."
    assert (checked.used, checked.kept, checked.moved, checked.dropped) == ([1, 2], 2, 0, 0)


def test_a_repeated_marker_is_written_once() -> None:
    checked = check_citations("Весной малину подкармливают азотом [1][1].", RASPBERRY)
    assert checked.text == "Весной малину подкармливают азотом [1]." and checked.used == [1]


def test_without_fragments_every_marker_goes() -> None:
    checked = check_citations("Весной малину подкармливают азотом [1]. Летом — калием [3].", [])
    assert checked.text == "Весной малину подкармливают азотом. Летом — калием." and checked.used == []


def test_an_answer_without_markers_gets_the_sources_that_back_it() -> None:
    answer = "Весной малину подкармливают азотом: 15 г мочевины на квадратный метр."
    checked = check_citations(answer, RASPBERRY)
    assert checked.text == answer and checked.used == [1]


def test_uncited_sources_are_the_backing_ones_and_at_most_two() -> None:
    assert sources_by_overlap("Малина — это ягода. Её едят летом и варят из неё варенье.", RASPBERRY) == []
    three = ("Весной малину подкармливают азотом и мочевиной. Летом малине нужен калий и фосфор. "
             "Осенью побеги ремонтантной малины срезают под корень.")
    assert sources_by_overlap(three, RASPBERRY) == [1, 2]


# --------------------------------------------------------------------------- the fallback


def test_the_extractive_answer_quotes_the_sentence_that_answers(lexical_quotes: None) -> None:
    extract = extractive_answer(SPRING, RASPBERRY)
    assert extract.text == f"{EXTRACT_LEAD}\n«{RASPBERRY[0]}»" and extract.used == [1]
    assert extractive_answer(SPRING, RASPBERRY, lead="Вот что нашлось:").text.startswith("Вот что нашлось:\n«")


def test_a_draft_with_an_option_the_page_lacks_gives_the_options_own_passage(lexical_quotes: None) -> None:
    # Set K's man(1): the model named an option of its own; the fallback shows the page's option with
    # what it does, not its description alone.
    from tests.test_quote import MAN_MODES

    checked = check_answer("Используйте параметр --update [1].", "Как найти страницы по слову из их краткого описания?",
                           [MAN_MODES], strict=True)
    assert checked.fallback and "invents" in checked.degenerate
    assert "«-k, --apropos: Эквивалентно работе apropos. Ищет в кратких описаниях" in checked.text


def test_nothing_to_quote_gives_no_extract(lexical_quotes: None) -> None:
    assert extractive_answer(SPRING, []).text == ""
    assert extractive_answer(SPRING, ["Коротко.", "Да."]).text == ""  # too short to quote


def test_a_degenerate_draft_is_replaced_by_the_quote(lexical_quotes: None) -> None:
    checked = check_answer("[4]", SPRING, RASPBERRY)
    assert checked.fallback and not checked.accepted
    assert checked.degenerate == ["empty", "bare_citations"]
    assert checked.text == f"{EXTRACT_LEAD}\n«{RASPBERRY[0]}»" and checked.used == [1]


# Drafts over the GIMP fragments of tests/fixtures/gimp-refusals-ru.json that name what the manual never
# does («Drop Shadow», «Pressure Opacity»): the strict check replaces them by the passages nearest the question.
SHADOW_DRAFT = "Выберите в меню Фильтры → Свет и тень → Drop Shadow и задайте смещение тени [1]."
MOUSE_DRAFT = "Да, динамика кисти работает и с мышью: включите параметр Pressure Opacity в параметрах инструмента [1]."


def test_an_inventing_draft_over_passages_that_do_not_answer_shows_them_as_the_nearest(
        lexical_quotes: None) -> None:
    """Issue 37: a question the manual does not answer passed the gate, the model answered from its own
    knowledge, and the nearest passages were shown as «В ваших документах об этом сказано так:»."""
    case = gimp_refusal("GU15")  # a drop shadow: no sentence of the four fragments covers it
    checked = check_answer(SHADOW_DRAFT, case["question"], case["fragments"], strict=True)
    assert checked.fallback and "invents" in checked.degenerate
    assert checked.text.startswith(f"{NEAREST_LEAD}\n«") and EXTRACT_LEAD not in checked.text
    assert "Drop Shadow" not in checked.text and checked.used  # the passages and their sources, nothing invented


def test_an_inventing_draft_over_the_answering_passage_keeps_the_documents_lead(lexical_quotes: None) -> None:
    case = gimp_refusal("B024")  # the manual: some dynamics work with a mouse too
    checked = check_answer(MOUSE_DRAFT, case["question"], case["fragments"], strict=True)
    assert checked.fallback and "invents" in checked.degenerate
    assert checked.text.startswith(f"{EXTRACT_LEAD}\n«Динамики создаются для использования с графическими "
                                   "планшетами, но некоторые доступны и для мыши.")


FAILED_DRAFTS = json.loads((FIXTURES / "failed_drafts.json").read_text(encoding="utf-8"))["drafts"]


@pytest.mark.parametrize("case", FAILED_DRAFTS, ids=[d["id"] for d in FAILED_DRAFTS])
def test_a_failed_drafts_first_sentences_are_kept_when_they_pass_alone(
        case: dict[str, object], lexical_quotes: None) -> None:
    """Issue 37 (set X): X013 says the fact first and then writes steps no passage holds; its first
    sentence is the answer, in the model's own words. X019 only repeats the question before its steps,
    and X001 opens vaguely before commands of its own: the documents' own words stand in for them. V016
    is unfounded as a whole (a judgement of the draft, not of a sentence): its first sentence, which
    alone passes, says the opposite of the handbook, and is not kept either."""
    question, draft, fragments = str(case["question"]), str(case["draft"]), list(case["fragments"])  # type: ignore[call-overload]
    checked = check_answer(draft, question, fragments, strict=True)
    assert checked.degenerate  # the whole draft fails
    if case["lead"]:
        assert checked.trimmed and checked.accepted and "$DEBEMAIL и $DEBFULLNAME" in checked.text
        assert draft.startswith(checked.text) and "nano" not in checked.text and "source" not in checked.text
    else:
        assert checked.fallback and not checked.trimmed and not draft.startswith(checked.text[:40])


def test_the_extracts_lead_asks_of_the_quoted_sentences_what_a_refusal_is_overruled_by(
        lexical_quotes: None) -> None:
    answering, silent = gimp_refusal("B024"), gimp_refusal("GU15")
    extract = extractive_answer(answering["question"], answering["fragments"])
    assert extract.covers and covers(answering["question"], answering["fragments"])
    assert failed("В ваших документах об этом не сказано.", answering["question"], answering["fragments"]) == ["refused"]
    # the same fragments, but only a sentence that does not answer shown: not an answer
    assert not covers(answering["question"], answering["fragments"], [silent["fragments"][0]])
    extract = extractive_answer(silent["question"], silent["fragments"])
    assert not extract.covers and not covers(silent["question"], silent["fragments"])
    assert failed("В ваших документах об этом не сказано.", silent["question"], silent["fragments"]) == []


def test_a_caller_names_both_leads_of_the_extract(lexical_quotes: None) -> None:
    case = gimp_refusal("GU15")
    checked = check_answer(SHADOW_DRAFT, case["question"], case["fragments"], strict=True,
                           lead="В базе знаний об этом сказано так:", nearest_lead="Ближе всего вот это:")
    assert checked.text.startswith("Ближе всего вот это:\n«")
    checked = check_answer("[4]", SPRING, RASPBERRY, lead="В базе знаний об этом сказано так:",
                           nearest_lead="Ближе всего вот это:")
    assert checked.text == f"В базе знаний об этом сказано так:\n«{RASPBERRY[0]}»"


def test_without_fragments_the_no_answer_text_depends_on_the_search() -> None:
    loop = "Весной малину подкармливают азотом. " * 3
    assert check_answer(loop, SPRING, []).text == NOT_FOUND
    assert check_answer(loop, SPRING, [], searched=False).text == CANNOT_ANSWER
    own = check_answer(loop, SPRING, [], no_answer="Пока не знаю.")
    assert own.text == "Пока не знаю." and own.used == [] and own.degenerate == ["repetition"]


def test_an_accepted_draft_has_its_citations_checked() -> None:
    checked = check_answer("Весной малину подкармливают азотом: 15 г мочевины на квадратный метр [3].",
                           SPRING, RASPBERRY)
    assert checked.accepted and checked.degenerate == []
    assert checked.text == GOOD and checked.used == [1] and checked.citations_moved == 1


def test_a_truncated_draft_loses_only_its_unfinished_sentence() -> None:
    draft = "Весной малину подкармливают азотом [1]. Летом вносят калий и фос"
    assert check_answer(draft, SPRING, RASPBERRY, truncated=True).text == "Весной малину подкармливают азотом [1]."
    assert check_answer(draft, SPRING, RASPBERRY).text == draft  # not cut unless it was


# --------------------------------------------------------------------------- covered by meaning

# Sets Q and R: the user's words are not the document's, and the model refused over this very passage.
SCANNED_QUESTION = "Почему поиск ничего не находит в отсканированном PDF?"
SCANNED = ["Поиск текста можно выполнять только по документам в формате PDF. В некоторых документах PDF текст "
           "представлен в виде изображения, поэтому в этих документах поиск также работать не будет.",
           "Календарь можно показать в обзоре месяца. Выберите пункт меню Вид.",
           "Закладки показаны на боковой панели."]


def test_a_passage_near_in_meaning_covers_a_question_its_words_half_match() -> None:
    from nodes.answering.answer_check import MEANING_OVERRULE, coverage

    assert 0.2 <= coverage(SCANNED_QUESTION, SCANNED) < 0.4  # words alone would let the refusal stand
    asked: list[str] = []

    def alike(value: float):  # type: ignore[no-untyped-def]
        def similarity(question: str, texts: list[str]) -> list[float]:
            asked.extend(texts)
            return [value] * len(texts)
        return similarity

    assert covers(SCANNED_QUESTION, SCANNED, similarity=alike(MEANING_OVERRULE + 0.01))
    assert any("текст представлен в виде изображения" in t for t in asked)  # the passages, read in meaning
    assert not covers(SCANNED_QUESTION, SCANNED, similarity=alike(MEANING_OVERRULE - 0.05))


def test_meaning_is_not_asked_when_words_decide() -> None:
    def never(question: str, texts: list[str]) -> list[float]:
        raise AssertionError("asked the embedding model though the words decided")

    assert covers(SPRING, RASPBERRY, similarity=never)  # the words cover it
    assert not covers("Как перезимовать голубике на балконе?", RASPBERRY, similarity=never)  # nothing in common


@pytest.mark.models
def test_with_the_embedding_model_an_answer_in_other_words_is_covered_and_a_neighbouring_passage_is_not() -> None:
    """The real model: the scanned-PDF passage answers its question; the GIMP manual's passages near
    «отбрасываемая тень», which the manual never describes, stay only the nearest (their words hold 0.2)."""
    assert covers(SCANNED_QUESTION, SCANNED)
    silent = gimp_refusal("GU15")
    assert not covers(silent["question"], silent["fragments"])


JUDGED_DRAFTS = json.loads((FIXTURES / "failed_judged_drafts.json").read_text(encoding="utf-8"))["drafts"]


@pytest.mark.parametrize("case", JUDGED_DRAFTS, ids=[d["id"] for d in JUDGED_DRAFTS])
def test_a_failed_drafts_passages_lead_as_the_answer_only_when_the_judgment_is_sure(
        case: dict[str, object], lexical_quotes: None, env) -> None:  # type: ignore[no-untyped-def]
    """Issue 37 (sets AI–AN): a silent question whose passages the judgment let through (0.62–0.65) got a
    draft from the model's own knowledge; the checks caught it, and the passages were shown under the
    documents' lead as if they answered. Past a failed draft they lead as the answer only at
    `local_fallback_judge` (0.9: over sets BC–BX silent questions' passages were led so at 0.71–0.87);
    AL003, answered by its passage, judged 0.84, is drafted as sure, and its failed draft gives way to
    the passages as the nearest."""
    from nodes.answering.chat_drafts import local_checked
    from nodes.retrieval.retrieve import Fragment

    fragments = [Fragment(chunk_id=n, document_id=n, distance=0.3, **f)  # type: ignore[arg-type]
                 for n, f in enumerate(case["fragments"], 1)]  # type: ignore[arg-type]
    checked = local_checked(str(case["draft"]), str(case["question"]), fragments, get_settings(),
                            judged=float(case["judged"]))  # type: ignore[arg-type]
    if float(case["judged"]) >= get_settings().local_answer_judge_near:  # type: ignore[arg-type]
        # AL003's draft failed on the question's own terms alone; judged sure, they are the user's wording
        assert not checked.fallback and checked.text.startswith(str(case["draft"])[:40])
        checked = local_checked(str(case["draft"]), str(case["question"]), fragments, get_settings(), judged=0.79)  # type: ignore[arg-type]
    assert checked.fallback and checked.degenerate
    assert checked.text.startswith(f"{NEAREST_LEAD}\n«") and EXTRACT_LEAD not in checked.text
    # the same draft judged surer (at `local_fallback_judge`, here short of the near band's sure odds, at which
    # the question's own terms would no longer make it unfounded): the lead the judgment alone gives
    env(GROVE_LOCAL_FALLBACK_JUDGE="0.75")
    surer = local_checked(str(case["draft"]), str(case["question"]), fragments, get_settings(), judged=0.75)  # type: ignore[arg-type]
    assert surer.fallback and surer.text.startswith(f"{EXTRACT_LEAD}\n«")


def test_a_refusal_over_the_answering_passage_keeps_the_answers_lead_however_sure_the_judgment(
        lexical_quotes: None) -> None:
    """A refusal is no sign the passages do not answer (the small model refuses over the very passage that
    answers): its passages keep the lead the judgment gave, not the surer one a draft that invented needs."""
    case = gimp_refusal("B024")
    refusal = "В ваших документах об этом не сказано."
    checked = check_answer(refusal, case["question"], case["fragments"], answered=True, vouched=False)
    assert checked.degenerate == ["refused"] and checked.text.startswith(f"{EXTRACT_LEAD}\n«")
    invented = check_answer(MOUSE_DRAFT, case["question"], case["fragments"], strict=True, answered=True,
                            vouched=False)
    assert "invents" in invented.degenerate and invented.text.startswith(f"{NEAREST_LEAD}\n«")



def test_a_loop_over_the_answering_passage_keeps_the_answers_lead_however_sure_the_judgment(
        lexical_quotes: None) -> None:
    """A draft that loops or slips into another language says nothing of the passages (BY016, held out:
    «repetition» over the passage that answers, judged 0.89, read as «не нашёл»): its passages keep the
    lead the judgment gave; only a draft that said what they do not (`INVENTING_CHECKS`) asks for surer odds."""
    case = gimp_refusal("B024")
    loop = "Выберите нужный инструмент на панели. " * 4
    checked = check_answer(loop, case["question"], case["fragments"], answered=True, vouched=False)
    assert checked.degenerate == ["repetition"] and checked.text.startswith(f"{EXTRACT_LEAD}\n«")
    assert check_answer(loop, case["question"], case["fragments"], answered=False,
                        vouched=False).text.startswith(f"{NEAREST_LEAD}\n«")

# Cervisia's handbook in Russian (set BO, cervisia-handbook-ru.pdf, p. 5), adding files and folders.
ADDING = ("Cervisia выполнит следующую команду cvs add имена файлов. Если операция завершится успешно, в колонке "
          "статуса для добавленных файлов отобразится «Добавлен в репозиторий». Чтобы фактически поместить файлы в "
          "репозиторий, вы должны передать их. Обратите внимание, что добавление каталогов не требует передачи "
          "впоследствии.")
FOLDER_COMMIT = "Нужно ли передавать изменения в репозиторий после добавления нового каталога через Cervisia?"


def test_a_yes_over_a_passage_that_says_no_contradicts() -> None:
    """BO014: the small model's «Да» where the handbook says a folder needs no commit."""
    draft = "Да, нужно передавать изменения в репозиторий после добавления нового каталога через Cervisia."
    assert "contradicts" in failed(draft, FOLDER_COMMIT, [ADDING])
    assert "contradicts" not in failed(draft, FOLDER_COMMIT, [ADDING], strict=False)


@pytest.mark.parametrize(("draft", "question"), [
    ("Нет, добавление каталогов не требует передачи.", FOLDER_COMMIT),  # says the passage's no
    ("Да, но после добавления каталога ничего передавать не нужно.", FOLDER_COMMIT),  # a yes that negates too
    ("Да, добавленные файлы нужно передать, чтобы они попали в репозиторий.",
     "Нужно ли передавать добавленные файлы, чтобы они фактически попали в репозиторий?"),  # the passage says yes
])
def test_a_yes_or_no_that_keeps_the_passages_answer_does_not_contradict(draft: str, question: str) -> None:
    assert "contradicts" not in failed(draft, question, [ADDING])


def test_a_no_in_one_word_is_a_no() -> None:
    """BW016: «Да, обязательно нужно указывать дату возврата» over «Дату возврата указывать необязательно»."""
    lending = "Дату возврата указывать необязательно. Также возможно добавить другие примечания."
    question = "Обязательно ли указывать дату возврата, когда отмечаешь, что отдал вещь кому-то на время?"
    assert "contradicts" in failed("Да, обязательно нужно указывать дату возврата.", question, [lending])


def test_a_negation_that_only_qualifies_is_no_contradiction() -> None:
    """«не позднее октября» bounds a yes; it does not answer no."""
    planting = "Ремонтантную малину можно сажать осенью, но не позднее середины октября."
    question = "Можно ли сажать ремонтантную малину осенью?"
    assert "contradicts" not in failed("Да, ремонтантную малину можно сажать осенью.", question, [planting])
    assert "contradicts" in failed("Да, ремонтантную малину можно сажать осенью.", question,
                                   ["Ремонтантную малину нельзя сажать осенью."])


# Déjà Dup's help (set BM) is silent on notifying a failed backup; KMix's handbook (set BL) on its keys.
NOTIFY = "Отправляет ли Déjà Dup уведомление, если резервное копирование завершилось с ошибкой?"
DUPLICITY = ("Тогда вам нужно использовать утилиту командной строки duplicity, которая используется в Déjà Dup для "
             "резервного копирования и восстановления файлов.")
BACKUPS = [DUPLICITY, "Déjà Dup — простой инструмент резервного копирования.",
           "Место хранения — это место, куда Déjà Dup будет помещать копии ваших файлов, чтобы их можно было позже "
           "восстановить."]
GLOBAL_KEYS = "Работают ли глобальные клавиши громкости KMix, когда программа свёрнута в панель?"
KEYS = ("Клавиши для увеличения и уменьшения громкости работают глобально, в том числе и тогда, когда KMix свёрнут "
        "или встроен в панель.")


def test_a_yes_that_says_the_question_back_where_no_sentence_says_it_is_unbacked() -> None:
    """BMU07: the question with «Да» before it, over passages that never say so."""
    draft = "Да, Déjà Dup отправляет уведомление о завершении резервного копирования с ошибкой."
    assert "unbacked_yes" in failed(draft, NOTIFY, BACKUPS)
    assert "unbacked_yes" not in failed(draft, NOTIFY, BACKUPS, strict=False)


@pytest.mark.parametrize(("draft", "question", "fragments"), [
    # a sentence says what the yes says back
    ("Да, глобальные клавиши громкости KMix работают глобально, в том числе и тогда, когда программа свёрнута в "
     "панель.", GLOBAL_KEYS, [KEYS]),
    # the yes says more than the question, in terms of its own (the other checks weigh those)
    ("Да, Déjà Dup использует для этого утилиту командной строки duplicity.", NOTIFY, BACKUPS),
])
def test_a_yes_a_sentence_backs_or_that_says_more_is_not_unbacked(draft: str, question: str,
                                                                  fragments: list[str]) -> None:
    assert "unbacked_yes" not in failed(draft, question, fragments)


# A help page's key list (as Konversation's and Character Map's handbooks give them).
KEYS = ("Чтобы закрыть все личные разговоры сразу, нажмите F11. Shift+Ctrl+G ищет предыдущее совпадение "
        "в таблице символов. Ctrl+G переходит к символу по его коду. Пункт меню Правка ▸ Отменить отменяет "
        "последнее действие.")


@pytest.mark.parametrize(("question", "draft", "misses"), [
    # the key the passage gives beside the question's words
    ("Какой клавишей закрыть сразу все личные разговоры?", "Нажмите клавишу F11 [1].", False),
    ("Какое сочетание клавиш ищет предыдущее совпадение?", "Нажмите Ctrl+Shift+G.", False),
    # a button or a click where a key was asked for (BRU05, BWU04)
    ("Какой клавишей закрыть сразу все личные разговоры?", "Нажмите кнопку OK.", True),
    # a key no passage names, and one the passages give for something else (BPU07, BQU05)
    ("Каким сочетанием клавиш отменить последнее действие?", "Нажмите Ctrl+Z.", True),
    ("Каким сочетанием клавиш отменить последнее действие?", "Отменить последнее действие можно клавишами Ctrl+G.",
     True),
    # not asked for a key, or not answered
    ("Как отменить последнее действие?", "Выберите Правка ▸ Отменить [1].", False),
    ("Каким сочетанием клавиш отменить последнее действие?", "В ваших документах об этом не сказано.", False),
])
def test_a_draft_asked_for_a_key_names_one_the_passages_give_for_the_question(
        question: str, draft: str, misses: bool) -> None:
    """Issue 37 (sets BO–BW): asked which key does something the documents give no key for, the small model
    named a button, a click or a key of its own, and the draft passed as the documents' answer."""
    failed = check_answer(draft, question, [KEYS], strict=True, answered=True, vouched=False)
    assert ("misses_key" in failed.degenerate) is misses
    if misses:
        assert failed.fallback and failed.text.startswith(f"{NEAREST_LEAD}\n«")
    assert "misses_key" not in check_answer(draft, question, [KEYS], strict=False).degenerate  # the local model's check
