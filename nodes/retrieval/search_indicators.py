"""The seed's indicator rules for "this question needs the user's base" (seed 001 §4.2 step 3).

They are a help for small local models, whose own tool decision is unreliable;
remote models decide alone from the system prompt. The rules are stated here
as data, so changing them is editing a list.
"""

from __future__ import annotations

import re

URL = re.compile(r"https?://\S+|www\.\S+", re.IGNORECASE)
FILE_NAME = re.compile(r"\b[\w\-. ]{1,80}\.(pdf|docx?|txt|md|mp3|mp4|ogg|wav|m4a)\b", re.IGNORECASE)
PHRASES = (
    "проверь в базе", "в базе", "по базе", "из базы", "по документ", "в документ", "из документ",
    "мои документ", "моих документ", "моим документ", "мой документ", "моём документ", "моем документ",
    "мои файл", "моих файл", "моим файл", "мой файл", "моём файл", "моем файл",
    "в файле", "по файлу", "из файла", "что я загрузил",
    "что я загружал", "я загрузил", "я отправлял", "в загруженн", "по ссылке", "в статье",
    "в записи", "в видео", "в аудио", "в голосов", "цитат", "источник", "cite", "n8n",
)


def base_indicators(question: str) -> list[str]:
    """Which rules fire for this question (empty: nothing says the base is needed)."""
    text = question.casefold()
    found = []
    if URL.search(question):
        found.append("url")
    if FILE_NAME.search(question):
        found.append("file name")
    found += [f"phrase «{p}»" for p in PHRASES if p in text]
    return found
