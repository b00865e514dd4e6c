"""Token counting and the per-step token budget of a plan (seed 004 "Управление токенами").

Tokens are counted with the vocabulary of the model in use: the local GGUF model's own tokenizer, loaded
vocabulary-only, once per process. A remote model's tokenizer is not available offline; the local
vocabulary then stands in as an estimate (`GROVE_LLM_TOKENIZER` may name the remote model's GGUF to make it
exact), and each LLM response's `usage` is kept so the real figure can be compared.
Figures: bench/README.md, «Chat turn without the LLM» (bench.chat_latency).
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache, lru_cache
from typing import Any

from pydantic import BaseModel

from grove.core.settings import get_settings

MESSAGE_OVERHEAD = 4  # ChatML: <|im_start|>role\n … <|im_end|>\n
_lock = threading.Lock()


@cache
def _vocabulary(path: str) -> Any:
    import llama_cpp

    # verbose=False would make llama-cpp-python swap sys.stdout and fd 1 for /dev/null while it
    # loads, swallowing what other threads print meanwhile (the console's replies, when this runs
    # as the warm-up); its chatter goes to fd 2 instead, silenced here (C writes there directly).
    with _c_stderr_silenced():
        return llama_cpp.Llama(model_path=path, vocab_only=True, verbose=True)


@contextmanager
def _c_stderr_silenced() -> Iterator[None]:
    """File descriptor 2 pointed at /dev/null for the block: C libraries write there directly."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def tokenizer_path() -> str:
    settings = get_settings()
    return settings.model_path(settings.llm_tokenizer or settings.local_llm_model)


def count_tokens(text: str) -> int:
    """Tokens of `text` in the model's vocabulary.

    Counted line by line where the vocabulary allows it (`_lines_add_up`): a prompt is mostly
    lines seen before (the rules, history, passages) around a few new ones (the bot's recent
    replies in the rules, the question), so the cache answers most of it. Counting each prompt
    whole cost the bot ≈ 13 % of its CPU in a burst of updates (py-spy, bench/message_path.py).
    """
    if not text:
        return 0
    path = tokenizer_path()
    if "\n" not in text or not _lines_add_up(path):
        return _count(path, text)
    return sum(_count(path, piece) for piece in _LINE_START.split(text))


_LINE_START = re.compile(r"(?<=\n)(?=\S)")
"""Where a line starts after a newline: a byte-level BPE pre-tokeniser (Qwen2, Llama 3, GPT-4
style) never joins the newline run before it to the text after it, so the pieces' counts add up."""

_PROBES = [
    "Правила:\n- Отвечай по-русски.\n  - кратко\n\n\tКод:\n```python\nprint('x')\n```\n",
    "[1] (pdf: a.pdf, стр. 3) «Текст.»\n[2] (docx: b.docx) «Ещё, и ещё…»\n«Вопрос?»\nОтвет!\n \nКонец",
    "Line one.\nLine two:\n\n  indented\n\r\nwindows\r\nтире —\nчисло 42\n42\n.\n,next",
]


@lru_cache(maxsize=8)
def _lines_add_up(path: str) -> bool:
    """Whether this vocabulary counts a text as the sum of its lines (checked once on probes:
    a vocabulary whose merges cross a newline counts whole texts instead)."""
    return all(_count(path, text) == sum(_count(path, piece) for piece in _LINE_START.split(text))
               for text in _PROBES)


@lru_cache(maxsize=16384)
def _count(path: str, text: str) -> int:
    """Cached: each turn re-counts the same rules, history and passages."""
    with _lock:
        vocabulary = _vocabulary(path)
        return len(vocabulary.tokenize(text.encode("utf-8"), add_bos=False, special=False))


def count_message_tokens(messages: list[dict[str, Any]]) -> int:
    """Prompt tokens of a chat request: every message's content plus the template's overhead."""
    return sum(count_tokens(str(m.get("content") or "")) + MESSAGE_OVERHEAD for m in messages) + 2


CUT_MARK = " …"


def truncate_to_tokens(text: str, limit: int) -> str:
    """A prefix of `text` (cut at a line or sentence end when possible), marked « …» as cut, within
    `limit` tokens with its mark."""
    if count_tokens(text) <= limit:
        return text

    def marked(end: int) -> str:
        return text[:end].rstrip() + CUT_MARK

    low, high = 0, len(text)
    while low < high:  # binary search on characters (token counts grow with the prefix, near enough)
        middle = (low + high + 1) // 2
        if count_tokens(marked(middle)) <= limit:
            low = middle
        else:
            high = middle - 1
    prefix = text[:low]
    cut = max(prefix.rfind("\n"), prefix.rfind(". "))
    at_sentence = marked(cut + 1)
    return at_sentence if cut > len(prefix) // 2 and count_tokens(at_sentence) <= limit else marked(low)


class Allocation(BaseModel):
    history: int
    rag: int
    response: int


class TokenBudgetManager:
    """Seed 004's dynamic budget: early steps get more retrieved context, late ones more history."""

    def __init__(self, total_budget: int, reserved_for_response: int) -> None:
        if reserved_for_response >= total_budget:
            raise ValueError("the response reserve must be smaller than the total budget")
        self.total_budget = total_budget
        self.reserved_for_response = reserved_for_response

    def allocate_for_step(self, step_number: int, total_steps: int, context_size: int) -> Allocation:
        """`context_size`: tokens already fixed (instructions, the question)."""
        available = max(0, self.total_budget - self.reserved_for_response - context_size)
        progress = step_number / max(total_steps, 1)
        rag_ratio = 1.0 - progress * 0.5  # from 100 % down to 50 %
        history_ratio = progress * 0.5  # from 0 % up to 50 %; the two always sum to 100 %
        return Allocation(history=int(available * history_ratio), rag=int(available * rag_ratio),
                          response=self.reserved_for_response)
