"""The frozen probe an int8 export is checked with on the machine that runs it.

Eight Russian questions, each with the one passage that answers it, on the kinds of things grove
holds (how-to steps, commands, gardening, reference facts). None of them is among the calibration
texts (`nodes/embedding/calibration.py`), so the probe does not grade the smoothing on what it was
fitted to. Queries are embedded with the query prompt, passages with the document prompt, as in
search. Changing a text changes every verdict's figures: the probe's digest is part of the cache
key (`nodes/embedding/int8_verdict.py`), so a changed probe is judged again.
"""

from __future__ import annotations

import hashlib

__all__ = ["PAIRS", "digest"]

PAIRS: tuple[tuple[str, str], ...] = (
    ("Когда собирают антоновку?",
     "Антоновка — старинный русский сорт яблони. Плоды снимают в конце сентября, а лёжку они "
     "набирают к ноябрю и хранятся до трёх месяцев в прохладном погребе."),
    ("Как поменять пароль учётной записи в Linux?",
     "Команда passwd без аргументов меняет пароль текущего пользователя; администратор задаёт "
     "пароль другого пользователя командой sudo passwd имя."),
    ("Чем подкормить голубику весной?",
     "Голубике нужна кислая почва: весной её подкармливают сульфатом аммония, а мульча из хвои "
     "или опилок хвойных пород держит кислотность на уровне pH 4–5."),
    ("Почему не открывается файл с кириллицей в имени?",
     "Если имя файла отображается вопросительными знаками, в системе не задана локаль UTF-8. "
     "Проверьте переменную LANG командой locale и выберите ru_RU.UTF-8."),
    ("Сколько варить гречку?",
     "Промытую крупу заливают водой в пропорции один к двум, доводят до кипения и варят под "
     "крышкой на слабом огне около двадцати минут, пока вода не впитается."),
    ("Как вставить оглавление в документ?",
     "Поставьте курсор туда, где должно быть содержание, и выберите «Вставка → Оглавление». "
     "Заголовки с уровнями 1–3 попадут в него автоматически."),
    ("На какой реке стоит Казань?",
     "Казань — столица Татарстана, крупный порт на левом берегу Волги при впадении в неё реки "
     "Казанки; город основан более тысячи лет назад."),
    ("Что делать, если сервер отвечает ошибкой 429?",
     "Код 429 означает, что превышен лимит запросов. Клиент должен подождать столько секунд, "
     "сколько указано в заголовке Retry-After, и повторить запрос."),
)


def digest(prompts: tuple[str, str]) -> str:
    """The probe's texts with the (query, document) prompts they are embedded with, hashed."""
    return hashlib.sha256(repr((PAIRS, prompts)).encode()).hexdigest()[:12]
