"""The quote under a local answer: which sentences of the fragments are quoted (nodes/answering/quote.py)."""

from __future__ import annotations

import pytest

from nodes.answering import quote as quote_module
from nodes.answering.quote import (MAX_QUOTED_ANSWER_CHARS, MIN_QUOTE_CHARS, NEAREST_LEAD, QUOTE_LEAD,
                                   SELECTORS, Choice, choose, select_quote, shortened, with_quote)

SPRING = "Ремонтантную малину весной подкармливают азотом: 15 г мочевины на квадратный метр."
SUMMER = "Летом малине нужен калий и фосфор, азот после июля не вносят."
AUTUMN = "Осенью побеги ремонтантной малины срезают под корень."


def test_the_sentence_that_matches_the_question_is_quoted_with_the_next() -> None:
    fragments = [f"{SUMMER} {SPRING} Мульчируют перегноем.", AUTUMN]
    [quote] = select_quote("Чем подкормить малину весной?", fragments, selector="best-sentence")
    assert quote.fragment == 1 and quote.text == f"{SPRING} Мульчируют перегноем."


def test_the_answers_own_words_point_at_the_sentence_it_drew_on() -> None:
    question = "Как обрезают малину?"
    fragments = ["Малину обрезают весной и осенью, как и смородину.",
                 "Малину обрезают секатором: двухлетние побеги вырезают у самой земли."]
    draft = "Двухлетние побеги вырезают у земли."
    assert select_quote(question, fragments, selector="ranked")[0].fragment == 1
    assert select_quote(question, fragments, draft, selector="answer-backed")[0].fragment == 2


def test_retrievals_order_breaks_a_tie_between_fragments() -> None:
    alike = ["Малину подкармливают весной азотом.", "Весной малину подкармливают азотом."]
    first = choose("Чем подкормить малину весной?", alike, None, Choice(rank_step=0.05))
    assert [q.fragment for q in first] == [1, 2]  # the higher-ranked first; the other nearly as good
    only = choose("Чем подкормить малину весной?", alike, None, Choice(rank_step=0.5))
    assert [q.fragment for q in only] == [1]  # a strong prior: the second scores below 0.8 of the first


def test_overlapping_fragments_never_quote_a_sentence_twice() -> None:
    # Neighbouring chunks share their edge sentences: the second quote must bring something new.
    fragments = [f"{SUMMER} {SPRING}", f"{SPRING} Мульчируют перегноем.", f"Подкормка малины весной: {AUTUMN}"]
    quotes = choose("Чем подкормить малину весной?", fragments, None,
                    Choice(following=2, second_ratio=0.0, max_chars=1000))
    sentences_quoted = [s for q in quotes for s in q.text.split(". ")]
    assert len(quotes) == 2 and len(sentences_quoted) == len(set(sentences_quoted))
    assert quotes[0].text.startswith(SPRING) and SPRING not in quotes[1].text


def test_a_sentence_the_answer_already_says_is_not_quoted_again() -> None:
    passage = f"{SPRING} Мульчируют перегноем."
    found = with_quote(f"Вот что нужно: {SPRING}", "Чем подкормить малину весной?", [passage], selector="ranked")
    assert found.text == f"Вот что нужно: {SPRING}\n\n{QUOTE_LEAD}\n«Мульчируют перегноем.»"


def test_a_quote_stays_within_its_length() -> None:
    long = "Малину подкармливают весной азотом, " + "и ещё раз азотом, " * 60 + "а потом поливают."
    [quote] = choose("Чем подкормить малину весной?", [long, AUTUMN], None, Choice(max_chars=200, second_ratio=2))
    assert len(quote.text) <= 202 and quote.text.endswith("…")


def test_an_answer_gets_the_passage_that_backs_it_and_names_its_fragment() -> None:
    found = with_quote("Осенью побеги срезают.", "Когда срезать малину?", [SPRING, AUTUMN], selector="answer-backed")
    assert found.used == [2]
    assert found.text == f"Осенью побеги срезают.\n\n{QUOTE_LEAD}\n«{AUTUMN}»"


def test_an_answer_that_already_quotes_the_passage_gets_no_second_copy() -> None:
    found = with_quote(SPRING, "Чем подкормить малину весной?", [SPRING, AUTUMN], selector="answer-backed")
    assert found.text == SPRING and not found.quoted and found.used == [1]  # not shown again, still the source


def test_a_long_answer_leaves_its_quote_less_room() -> None:
    passage = "Осенью побеги ремонтантной малины срезают под корень, " + "а затем мульчируют перегноем, " * 20 + "и всё."
    draft = "Осенью малину срезают. " * 40  # 920 characters
    found = with_quote(draft.strip(), "Когда срезать малину?", [passage], selector="answer-backed")
    assert len(found.text) <= MAX_QUOTED_ANSWER_CHARS and found.text.endswith("…»") and found.used == [1]


def test_an_answer_too_long_for_its_quote_gives_way_whole_sentences_at_a_time() -> None:
    draft = " ".join(f"Шаг {n}: возьмите острый секатор и работайте в перчатках." for n in range(1, 31))  # ~1,700 chars
    found = with_quote(draft, "Когда срезать малину?", [AUTUMN], selector="answer-backed")
    answer, _, quote = found.text.partition(f"\n\n{QUOTE_LEAD}\n")
    assert len(found.text) <= MAX_QUOTED_ANSWER_CHARS and quote == f"«{AUTUMN}»"
    assert draft.startswith(answer) and answer.endswith("в перчатках.")  # the first sentences, each whole
    assert len(answer) >= MAX_QUOTED_ANSWER_CHARS - MIN_QUOTE_CHARS - 60  # only as much as the quote needs


def test_shortened_keeps_whole_sentences_or_the_first_words() -> None:
    assert shortened(SPRING, 1000) == SPRING
    assert shortened(f"{SUMMER} {AUTUMN}", len(SUMMER) + 5) == SUMMER
    assert shortened(SPRING, 30) == "Ремонтантную малину весной …"  # not one sentence fits


def test_a_refusal_gets_the_passage_nearest_the_question_instead() -> None:
    found = with_quote("В документах об этом не сказано.", "Когда срезать побеги малины?", [SPRING, AUTUMN],
                       selector="answer-backed", refusal=True)
    assert found.text == f"{NEAREST_LEAD}\n«{AUTUMN}»" and found.used == [2]


def test_nothing_to_quote_leaves_the_answer_as_it_is() -> None:
    found = with_quote("Не знаю.", "Чем подкормить малину весной?", ["—"], selector="answer-backed")
    assert found.text == "Не знаю." and found.used == []


def test_an_unknown_selector_is_named_in_the_error() -> None:
    with pytest.raises(ValueError, match="best-sentence"):
        select_quote("?", [SPRING], selector="nonexistent")
    assert {"best-sentence", "ranked", "answer-backed"} <= set(SELECTORS)



def test_meaning_reorders_the_lexically_best_sentences() -> None:
    # The user's words are not the manual's: «ровный круг» is what «круглым» says.
    fragments = ["Круг рисуют инструментом эллипса.", "Удерживайте Shift, и выделение станет круглым."]
    how = Choice(following=0, second_ratio=2.0, meaning_weight=2.0, meaning_pool=8)

    def alike(question: str, texts: list[str]) -> list[float]:
        return [0.9 if "Shift" in text else 0.1 for text in texts]  # a stand-in for the embeddings

    assert choose("Как нарисовать ровный круг?", fragments, None, how, lambda q, t: [0.0] * len(t))[0].fragment == 1
    [quote] = choose("Как нарисовать ровный круг?", fragments, None, how, alike)
    assert quote.fragment == 2 and quote.text == fragments[1]


def test_a_sentence_is_read_by_meaning_as_it_would_be_quoted_not_with_the_one_before() -> None:
    # Set BD (Totem's help): read with the sentence before it, «Сделайте это…» carried the brightness
    # sentence's meaning, and its quote left the brightness out.
    answer = "Этот параметр позволяет настроить Яркость, Контрастность, Насыщенность или Оттенок видео."
    after = "Сделайте это, переместив соответствующие ползунки."
    last = "Вы можете вернуться к первоначальным настройкам."
    fragments = [f"{answer} {after} {last}"]
    how = Choice(following=1, second_ratio=2.0, meaning_weight=2.0, meaning_pool=8)
    read: list[str] = []

    def alike(question: str, texts: list[str]) -> list[float]:
        read.extend(texts)
        return [0.9 if "Яркость" in text else 0.1 for text in texts]  # a stand-in for the embeddings

    [quote] = choose("Где ползунки, чтобы картинка стала светлее?", fragments, None, how, alike)
    assert quote.text == f"{answer} {after}"
    assert sorted(read) == sorted([f"{answer} {after}", f"{after} {last}", last])


def test_the_meaning_selector_reads_the_store_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import nodes.answering.quote

    calls: list[tuple[str, list[str]]] = []

    def recorded(question: str, texts: list[str]) -> list[float]:
        calls.append((question, list(texts)))
        return [0.5] * len(texts)

    monkeypatch.setattr(nodes.answering.quote, "embedded_similarity", recorded)
    select_quote("Чем подкормить малину весной?", [SPRING, AUTUMN], selector="meaning")
    [(question, windows)] = calls  # one call for the pool: each sentence read as it would be quoted
    assert question == "Чем подкормить малину весной?" and SPRING in windows


def test_a_sentence_cut_differently_in_another_chunk_is_still_not_quoted_twice() -> None:
    # One chunk begins mid-paragraph, so its sentence is a piece of the other chunk's longer one.
    longer = f"Удобрения вносят так: {SPRING[0].lower()}{SPRING[1:]}"
    quotes = choose("Чем подкормить малину весной?", [longer, SPRING, AUTUMN], None,
                    Choice(second_ratio=0.0, max_chars=1000))
    assert quotes[0].fragment == 1 and all(q.fragment != 2 for q in quotes)


# The GIMP 2.10 manual as Debian ships it in Russian (gimp-tool-free-select.html): untranslated English
# sentences among the Russian ones.
FREE_SELECT = ("Or release the mouse button and drag to draw a polygonal selection. When the end point is on top "
               "of the starting point, click to close the selection. Press the Ctrl key and click on the end point: "
               "moving the mouse pointer forces moving angles to 15°; so, you can draw horizontal or vertical lines "
               "easily. В режиме многоугольника выделение является предварительным; бегущий пунктир присутствует, "
               "но маленький жёлтый кружок ещё не исчез: выделение можно скопировать, а также, нажав клавишу "
               "Backspace, можно вернуться к предыдущему шагу создания выделения (снова разомкнуть выделение) и "
               "редактировать его.")


def test_a_russian_question_is_not_answered_with_english_prose() -> None:
    quotes = choose("Как замкнуть выделение в режиме многоугольника?", [FREE_SELECT], None,
                    Choice(following=3, max_chars=1200))
    assert quotes and quotes[0].text.startswith("В режиме многоугольника")
    assert "release the mouse" not in quotes[0].text and "Press the Ctrl" not in quotes[0].text


def test_a_command_line_is_quoted_after_the_sentence_that_introduces_it() -> None:
    # Epiphany's help (set BK): the command, then the sentence that answers whether it works on Debian.
    fragment = ("Чтобы добавить сертификат, выполните следующую команду для его импорта:\n\n"
                "$ sudo trust anchor /home/user/Downloads/certificate.crt\n\n"
                "К сожалению, это не будет работать на системах на базе Debian, таких как Ubuntu.")
    [quote] = choose("Сработает ли импорт сертификата командой trust anchor в Debian?", [fragment], None,
                     Choice(following=2, max_chars=1200))
    assert "sudo trust anchor" in quote.text and "не будет работать на системах на базе Debian" in quote.text


def test_english_prose_is_quoted_when_nothing_else_is_there() -> None:
    english = FREE_SELECT.split(" В режиме")[0]
    assert choose("Как замкнуть выделение?", [english], None, Choice())


# man(1) of man-db in Russian (manpages-ru 4.18.1), as grove extracts it from the PDF of set K
# (bench/sets/docs/manpages-ru-man-db/man.1.pdf): each option on a line of its own, its description
# on the next.
MAN_MODES = ("Основные режимы работы\n"
             "-f, --whatis\n"
             "Эквивалентно работе whatis. Отображает краткое описание из справочной страницы, если оно есть. "
             "Подробней смотрите whatis(1).\n"
             "-k, --apropos\n"
             "Эквивалентно работе apropos. Ищет в кратких описаниях справочных страниц ключевые слова и "
             "показывает любые совпадения. Подробней смотрите apropos(1).\n"
             "-K, --global-apropos\n"
             "Поиск текста во всех справочных страницах. Используется простой поиск перебором, что занимает "
             "определённое время.\n"
             "-l, --local-file\n"
             "Включить «локальный» режим. Форматирует и показывает локальные справочные файлы, а не ищет их в "
             "справочной коллекции системы.")


@pytest.mark.parametrize("selector", ["ranked", "meaning"])
def test_a_quoted_option_description_names_its_option(selector: str) -> None:
    # The description alone does not tell the user which option does it: the term line leads the
    # quote, and the description from its beginning.
    [quote] = select_quote("Как найти страницы по слову из их краткого описания?", [MAN_MODES], selector=selector,
                           similarity=lambda q, texts: [0.0] * len(texts))
    assert quote.text.startswith("-k, --apropos: Эквивалентно работе apropos. Ищет в кратких описаниях справочных")


def test_a_long_description_is_quoted_from_the_answering_sentence_after_its_term() -> None:
    long = MAN_MODES.replace("Эквивалентно работе apropos.", "Эквивалентно работе apropos. " + "Длинное пояснение. " * 20)
    [quote] = choose("Как найти страницы по слову из их краткого описания?", [long], None, Choice())
    assert quote.text.startswith("-k, --apropos: … Ищет в кратких описаниях справочных страниц")


def test_a_question_naming_an_option_finds_its_description() -> None:
    # «MINCATWIDTH» is only in the term line: the description matches through it (set K's manpath(5)).
    config = ("MAXCATWIDTH\xa0ширина\nЕсли ширина терминала больше чем ширина, то cat страницы создаваться не будут.\n"
              "MINCATWIDTH\xa0ширина\nЕсли ширина терминала меньше чем ширина, то cat страницы создаваться не будут.")
    [quote] = choose("Что задаёт MINCATWIDTH?", [config], None, Choice())
    assert quote.text.startswith("MINCATWIDTH\xa0ширина: Если ширина терминала меньше")


def test_a_quote_ends_where_the_next_option_begins() -> None:
    [quote] = choose("Как искать текст во всех справочных страницах?", [MAN_MODES], None, Choice(following=3))
    assert quote.text.startswith("-K, --global-apropos: Поиск текста во всех справочных страницах.")
    assert "-l, --local-file" not in quote.text and "локальный" not in quote.text


@pytest.mark.parametrize("line", ["-d, --debug", "-?, --help", "--usage", "-m система[,...], --systems=система[,...]",
                                  "-C\xa0файл,\xa0--config-file=файл", "-T[устройство], --troff-device[=устройство]",
                                  "--add-user-tag-to тег,шаблон", "MANPAGER, PAGER", "MINCATWIDTH\xa0ширина",
                                  "MANDB_MAP manpath_элемент [ catpath_элемент ]", "NOCACHE"])
def test_option_and_variable_lines_are_definition_terms(line: str) -> None:
    fragment = f"{line}\nОписание параметра."
    assert quote_module.split([fragment])[0][-1].term == line


KONSOLE_VIEW = ("Меню «Вид»\n\nВид → Разделить окно → Разделить окно по вертикали (Ctrl+()\n"
                "Разделяет окно на левую и правую части с одинаковым набором вкладок. Любой вывод на одной вкладке "
                "дублируется и во второй вкладке.\nВид → Разделить окно → Разделить окно по горизонтали (Ctrl+))\n"
                "Разделяет окно на верхнюю и нижнюю части с одинаковым набором вкладок")


def test_a_menu_command_is_quoted_with_its_menu_path_and_keys() -> None:
    """Konsole's command list (set AG): the description answers «how», the path and key above it say how."""
    [quote] = choose("Как поделить окно терминала на левую и правую половины?", [KONSOLE_VIEW], None,
                     Choice(following=3))
    assert quote.text.startswith("Вид → Разделить окно → Разделить окно по вертикали (Ctrl+(): Разделяет окно на "
                                 "левую и правую части")
    assert "по горизонтали" not in quote.text  # the next command's path ends the quote


@pytest.mark.parametrize("line", ["Вид → Разделить окно → Разделить окно по вертикали (Ctrl+()",
                                  "Настройка → Настроить уведомления...", "Файл → Выход (Ctrl+Q)"])
def test_menu_paths_are_definition_terms(line: str) -> None:
    assert quote_module.split([f"{line}\nОписание команды."])[0][-1].term == line


@pytest.mark.parametrize("line", ["MAN(1) Утилиты просмотра справочных страниц MAN(1)", "Основные режимы работы",
                                  "- это пункт списка", "-k — ищет в описаниях.", "ВНИМАНИЕ: не удаляйте файл",
                                  "Эквивалентно работе whatis.", "Выберите Вид → Показать меню, чтобы вернуть его.",
                                  "→ стрелка"])
def test_headings_running_heads_and_sentences_are_not_terms(line: str) -> None:
    fragment = f"{line}\nОписание параметра."
    assert quote_module.split([fragment])[0][-1].term == ""


def test_a_descriptions_later_paragraph_is_quoted_after_its_term() -> None:
    # man(1): the option's second paragraph answers «how to stop hyphenation»; its first is long.
    first = ("Обычно, nroff автоматически расставляет переносы в словах при разрывах строк, даже если в словах "
             "нет дефисов, если это необходимо для равномерного расположения слов в строке. ")
    text = ("--no-hyphenation, --nh\n" + first * 2 + "\n"
            "Если вы пишите справочную страницу и просто хотите отключить в nroff перенос в словах в неподходящем "
            "месте, не используйте этот параметр, а почитайте документацию к nroff.\n"
            "Основные режимы работы\n"
            "Текст следующего раздела о переносах в словах.")
    [quote] = choose("Как отключить перенос в словах?", [text], None, Choice(following=0))
    assert quote.text.startswith("--no-hyphenation, --nh: … Если вы пишите справочную страницу")
    assert [s.term for s in quote_module.split([text])[0][-2:]] == ["", ""]  # not a heading, nor across one
