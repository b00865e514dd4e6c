"""Russian sample texts and a seeded text generator shared by the chunking tests."""

from __future__ import annotations

import random

# A realistic knowledge-base document: abbreviations, initials, decimals,
# quotes and direct speech, ellipses, a list, a one-item-per-line block.
DOCUMENT = """\
Положение о библиотеке им. А. С. Пушкина

Библиотека основана в 1899 г. по инициативе проф. И. И. Петрова. В 2023 г. фонд составил 3.5 млн экз., т. е. вырос почти вдвое за 20 лет. Доля электронных изданий — 12,5 %.

Читатели могут пользоваться абонементом, читальным залом и т. д. Выдача книг на дом производится по читательскому билету, т. е. только зарегистрированным пользователям. Срок пользования — 14 дней, см. п. 4.2 Правил.

«Мы открыты для всех!» — говорит директор Н. В. Смирнова. По её словам, посещаемость выросла на 17.3 % к 2024 г. Она добавила: «Приходите... Мы ждём вас». Подробнее см. на сайте.

Для записи необходимы:
- паспорт гражданина РФ;
- фотография 3×4 см;
- заявление установленного образца.

Часы работы:
Понедельник – пятница: 9:00–20:00
Суббота: 10:00–18:00
Воскресенье: выходной

Адрес: г. Москва, ул. Ленина, д. 5, стр. 2. Телефон для справок указан на сайте. Вопросы можно задать по эл. почте. Ответ даётся в течение 3 раб. дней."""

# Long paragraphs: each is longer than the small targets used in the tests,
# so the chunker has to fall back to sentence boundaries.
LONG_PARAGRAPHS = [
    (
        "Регламент устанавливает порядок рассмотрения обращений граждан, "
        "поступивших в министерство в письменной форме или в форме электронного "
        "документа. Обращение регистрируется в течение 3 дней с момента "
        "поступления, т. е. не позднее следующего рабочего дня после выходных. "
        "Ответ направляется заявителю в срок до 30 дней; в исключительных случаях "
        "срок может быть продлён ещё на 30 дней с уведомлением заявителя. "
        "Контроль за соблюдением сроков осуществляет зам. министра В. П. Орлов. "
        "Сведения о ходе рассмотрения предоставляются по телефону, эл. почте и "
        "т. п. каналам связи. Повторные обращения по тому же вопросу, на который "
        "заявителю уже дан ответ по существу, могут быть оставлены без ответа."
    ),
    (
        "В 1830 г. А. С. Пушкин провёл осень в Болдине. За три месяца он "
        "закончил «Евгения Онегина», написал «Повести Белкина» и «Маленькие "
        "трагедии». Позже он писал: «Я в Болдине писал, как давно уже не "
        "писал»... Исследователи называют этот период Болдинской осенью. "
        "Средняя продуктивность поэта в те недели, по подсчётам проф. Н. Н. "
        "Сергеева, составила 3.5 произведения в неделю, т. е. в несколько раз "
        "больше обычного. «Болдинская осень» стала нарицательным выражением. "
        "Так говорят о любом периоде необычайного творческого подъёма."
    ),
]

_SUBJECTS = [
    "Сотрудник отдела", "Министерство", "Проф. И. И. Иванов", "Библиотека им. Горького",
    "Компания", "Пользователь", "Комиссия", "Н. В. Смирнова", "Система", "Заявитель",
]
_VERBS = [
    "подготовил отчёт", "рассмотрела заявление", "обновила базу знаний", "направил запрос",
    "утвердила план", "получил ответ", "провела проверку", "изменила регламент",
]
_TAILS = [
    "", " в 2023 г.", " в срок до 30 дней", ", т. е. досрочно", " на ул. Ленина, д. 5",
    " и т. д.", " (см. п. 4.2)", " с ростом на 3.5 %", " по эл. почте", " в 1999 г. в Москве",
    ", и др.", " по адресу: г. Казань, пр. Победы, д. 12",
]
_ENDINGS = [".", ".", ".", "!", "?", "...", "…"]
_BULLETS = ["- ", "• ", "1. ", "2) ", "а) ", "— "]
_SPACES = [" ", " ", " ", "  ", "\u00a0", "\t"]
_PARAGRAPH_BREAKS = ["\n\n", "\n\n", "\n \n", "\r\n\r\n", "\n\n\n", "\n\t\n"]


def _sentence(rng: random.Random) -> str:
    body = f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)}{rng.choice(_TAILS)}"
    if rng.random() < 0.15:
        return f"«{body}{rng.choice(['!', '?', ''])}» — сообщил А. С. Петров."
    return body + rng.choice(_ENDINGS)


def _paragraph(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.15:  # a list with an intro line
        items = [rng.choice(_VERBS) + rng.choice([";", "", "."]) for _ in range(rng.randint(2, 5))]
        bullet = rng.choice(_BULLETS)
        return "Перечень:\n" + "\n".join(bullet + item for item in items)
    if kind < 0.2:  # one sentence far longer than any target: forces whitespace cuts
        return " ".join(rng.choice(_VERBS) for _ in range(rng.randint(150, 400))) + "."
    if kind < 0.23:  # an unbreakable token (URL-like) of a few hundred characters
        return "Ссылка: https://example.org/" + "a1" * rng.randint(100, 400) + " — см. выше."
    if kind < 0.3:
        return rng.choice(LONG_PARAGRAPHS)
    sentences = [_sentence(rng) for _ in range(rng.randint(1, 12))]
    return "".join(s + rng.choice(_SPACES) for s in sentences[:-1]) + sentences[-1]


def generate_text(seed: int, paragraphs: int | None = None) -> str:
    """A reproducible pseudo-Russian document mixing every tricky construct."""
    rng = random.Random(seed)
    count = paragraphs if paragraphs is not None else rng.randint(1, 25)
    parts = [_paragraph(rng) for _ in range(count)]
    text = "".join(p + rng.choice(_PARAGRAPH_BREAKS) for p in parts[:-1]) + parts[-1]
    lead = rng.choice(["", "\n", "  ", "\n\n \t"])
    trail = rng.choice(["", "\n", " \n\n"])
    return lead + text + trail
