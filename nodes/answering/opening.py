"""A local answer asked in two parts: its first words from a passage, the rest from the whole fragments.

Why: on two cores the local model reads about 75–95 prompt tokens a second, and its first word
waits for the whole prompt — four fragments are ~900–1,400 tokens, 13–18 s of a draft with no
word of the model's. The passage that best answers the question (`nodes/answering/quote.py`,
shown under the draft at once) is a tenth of that. So the answer is asked as two raw completions
(`nodes/answering/llm.py` `chatml`) whose prompts share one beginning:

1. the rules, the passage, the question → the model's first few words;
2. the rules, the passage, then the whole fragments, the question, and the answer begun with
   those words → the rest of it.

The server's prefix cache keeps the rules and the passage of the first request, so the second
reads only the fragments and the question. The opening is cut to its first few words, and never
to the whole of what the model wrote: a whole first sentence written from the passage alone was,
measured, often the whole answer (the model stopped right after it), and the fragments were read
for nothing. Cut inside its sentence, the answer's substance is still written with the fragments
in view.

Measured (`bench/answer_eval.py --configs before,opening-3`, bench/README.md): the model's words
at 4.7 s instead of 16.5 s, but 61 % of answers correct and cited instead of 69 % — begun from one
passage, the model tends to continue that passage rather than answer. So it is off by default
(`GROVE_LOCAL_ANSWER_OPENING=0`), a choice for a deployment that prefers the sooner words.

An opening that refuses («в документах об этом не сказано») was written from one passage, which
may have missed what a whole fragment holds: it is dropped, and the answer is asked from its start.
"""

from __future__ import annotations

from collections.abc import Callable

from nodes.answering.answer_check import is_refusal
from nodes.answering.llm import Decoding, LLMReply, Message, chatml, llm_text_task
from nodes.answering.token_budget import count_tokens
from nodes.telegram.stream import after, current_sink, paused

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
           ask: Callable[..., LLMReply] | None = None) -> LLMReply:
    """The answer to `whole` (the request with the whole fragments), begun with the first words of
    the answer to `first` (the same request with one passage), which are shown as soon as they exist.

    The answer's token bound (`decoding.max_tokens`) is the two parts'.
    """
    ask = ask or llm_text_task()
    sink = current_sink()
    with paused():  # the words kept are known only once they are all written
        written = ask(chatml(first), max_tokens=TOKENS_PER_WORD * words + 4, decoding=decoding)
    opening = opening_of(written, words)
    if opening and sink is not None:
        sink(opening)
    limit = decoding.max_tokens if decoding is not None and decoding.max_tokens else None
    rest_tokens = max(limit - count_tokens(opening), 16) if limit else None
    with after(opening):  # the rest begins with its own space: the opening ends on a word
        rest = ask(chatml(whole, prefill=opening), max_tokens=rest_tokens, decoding=decoding)
    return LLMReply(content=(opening + rest.content).strip(), finish_reason=rest.finish_reason, model=rest.model)
