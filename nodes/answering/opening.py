"""A local answer asked in two parts: its first words from a passage, the rest from the whole fragments.

The local model's first word waits for the whole prompt, and the fragments take seconds to read; the
passage that best answers the question (`nodes/answering/quote.py`) is a fraction of that. So two raw
completions share one beginning: the rules, the passage and the question give a few first words (no more,
so the substance is written with the fragments in view); the prefix cache then reads only the fragments.
An opening that refuses is dropped. Begun from one passage, the model tends to continue it rather than
answer, so this is off by default (`GROVE_LOCAL_ANSWER_OPENING=0`), for a deployment wanting sooner words.
Figures: bench/README.md, «Offline answers end to end» (bench.answer_eval).
"""

from __future__ import annotations

from collections.abc import Callable

from nodes.answering.answer_check import is_refusal
from nodes.answering.llm import Decoding, LLMReply, Message, chatml
from nodes.answering.token_budget import count_tokens
from nodes.telegram.stream import Show, after

TOKENS_PER_WORD = 3  # Russian words in the local model's vocabulary, with room to spare


def opening_of(reply: LLMReply, words: int) -> str:
    """The first `words` words of what the model wrote, never the last one (which may be unfinished,
    or end the answer); nothing when it refuses."""
    text = reply.content.strip()
    if is_refusal(text):
        return ""
    written = text.split()
    return " ".join(written[:min(words, len(written) - 1)])


def opened(first: list[Message], whole: list[Message], decoding: Decoding | None, *, words: int,
           ask: Callable[..., LLMReply], show: Show | None = None) -> LLMReply:
    """The answer to `whole` (the request with the whole fragments), begun with the first words of
    the answer to `first` (the same request with one passage), which are shown (`show`: the turn's
    draft, if any) as soon as they exist.

    The answer's token bound (`decoding.max_tokens`) is the two parts'; `ask` is a raw completion
    (`llm.llm_text_task`).
    """
    # Not shown while written: the words kept are known only once they are all written.
    written = ask(chatml(first), max_tokens=TOKENS_PER_WORD * words + 4, decoding=decoding)
    opening = opening_of(written, words)
    if opening and show is not None:
        show(opening)
    limit = decoding.max_tokens if decoding is not None and decoding.max_tokens else None
    rest_tokens = max(limit - count_tokens(opening), 16) if limit else None
    rest = ask(chatml(whole, prefill=opening), max_tokens=rest_tokens, decoding=decoding,
               on_text=after(show, opening))  # the rest begins with its own space: the opening ends on a word
    return LLMReply(content=(opening + rest.content).strip(), finish_reason=rest.finish_reason, model=rest.model)
