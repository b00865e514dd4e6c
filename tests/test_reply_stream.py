"""The local model's answer streamed into one Telegram message: pace, flood control, the final edit.

The draft's pacing is checked with a fake clock and a recording API; the whole path — a chat turn,
the scripted local model streaming word by word, the Bot API stand-in — with the real bot.
"""

from __future__ import annotations

from grove.core.settings import get_settings
import json

import psycopg
import pytest

from nodes.telegram import stream
from nodes.telegram.stream import MORE, Draft, DraftsRefused, RetryLater, beneath, streaming
from nodes.telegram.html import markdown_html
from nodes.telegram.reply import TELEGRAM_TEXT_LIMIT
from tests.support.bot import choose_chat, new_bot, running
from tests.support.scripted_llm import ScriptedLLM, text, trickle, varied_answer
from tests.support.telegram_standin import TelegramStandin


class Api:
    """Records draft calls; can be told to answer the next one with flood control or an error."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail: Exception | None = None

    def _record(self, kind: str, text: str) -> None:
        if self.fail is not None:
            failure, self.fail = self.fail, None
            raise failure
        self.calls.append((kind, text))

    def send(self, chat_id: int, text: str, stop: str | None = None) -> int:
        self._record("send", text)
        return 77

    def edit(self, chat_id: int, message_id: int, text: str, stop: str | None = None) -> None:
        assert message_id == 77
        self._record("edit", text)

    def delete(self, chat_id: int, message_id: int) -> None:
        self._record("delete", str(message_id))

    def draft(self, chat_id: int, draft_id: int, text: str) -> None:
        assert draft_id > 0
        self._record("draft", text)


class OldServer(Api):
    """A Bot API server before 9.3: no sendMessageDraft."""

    def draft(self, chat_id: int, draft_id: int, text: str) -> None:
        raise DraftsRefused("Not Found")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


WORDS = "Малину весной подкармливают азотом пятнадцать граммов мочевины на метр и поливают".split()


def grow(draft: Draft, clock: Clock, step: float) -> None:
    """The model's text word by word, ``step`` seconds apart."""
    for n in range(1, len(WORDS) + 1):
        draft.show(" ".join(WORDS[:n]))
        clock.now += step


def test_the_draft_appears_after_the_first_words_and_is_edited_at_a_steady_pace() -> None:
    api, clock = Api(), Clock()
    draft = Draft(1, api, interval=1.5, first_chars=40, clock=clock)
    grow(draft, clock, 0.5)  # 12 words over 6 s
    kinds = [kind for kind, _ in api.calls]
    assert kinds[0] == "send" and set(kinds[1:]) == {"edit"}
    assert len(api.calls[0][1]) >= 40 + len(MORE)  # not before the first words exist
    assert 2 <= len(api.calls) <= 1 + 6 / 1.5  # at most one call per interval
    texts = [t.removesuffix(MORE) for _, t in api.calls]
    assert all(later.startswith(earlier) for earlier, later in zip(texts, texts[1:]))  # in order
    assert all(t.endswith(MORE) for _, t in api.calls)  # marked as unfinished
    assert draft.message_id == 77


def test_the_passages_are_shown_at_once_and_then_under_the_models_words() -> None:
    api, clock = Api(), Clock()
    draft = Draft(1, api, interval=1.5, first_chars=40, clock=clock)
    show = beneath(draft.show, "Из документа:\n«Малину весной подкармливают азотом.»")
    assert show is not None and show != draft.show
    assert api.calls == [("send", "Из документа:\n«Малину весной подкармливают азотом.»" + MORE)]
    clock.now += 2
    show("Азотом, весной.")  # the model's first words: above the passages
    assert beneath(draft.show, "") == draft.show  # no passages: the plain draft
    assert beneath(None, "Из документа:\n«…»") is None  # no draft: nothing is shown
    assert api.calls[1] == ("edit", "Азотом, весной.\n\nИз документа:\n«Малину весной подкармливают азотом.»" + MORE)


class Later:
    """A recording scheduler: the test fires what was scheduled."""

    def __init__(self) -> None:
        self.due: list[tuple[float, object]] = []
        self.cancelled = 0

    def __call__(self, delay: float, action):  # type: ignore[no-untyped-def]
        self.due.append((delay, action))
        return self.cancel

    def cancel(self) -> None:
        self.cancelled += 1

    def fire(self) -> None:
        _, action = self.due.pop(0)
        action()  # type: ignore[operator]


def held_back(*texts: str) -> tuple[Api, Clock, Later, Draft]:
    """A draft sent «Весной малину», then shown `texts` half a second later, too soon for the pace."""
    api, clock, later = Api(), Clock(), Later()
    draft = Draft(1, api, interval=1.5, first_chars=5, clock=clock, schedule=later)
    draft.show("Весной малину")
    clock.now += 0.5
    for shown in texts:
        draft.show(shown)
    return api, clock, later, draft


def test_text_held_back_by_the_pace_is_shown_when_the_pace_allows() -> None:
    api, clock, later, _ = held_back("Весной малину подкармливают",
                                     "Весной малину подкармливают азотом")  # the last words for a while
    assert [k for k, _ in api.calls] == ["send"]
    assert len(later.due) == 1 and later.due[0][0] == pytest.approx(1.0)  # once, when the pace allows
    clock.now += 1.0
    later.fire()
    assert api.calls[-1] == ("edit", "Весной малину подкармливают азотом" + MORE)  # the newest text


def test_held_back_text_never_replaces_newer_text() -> None:
    api, clock, later, draft = held_back("Весной малину подкармливают")
    clock.now += 1.0
    draft.show("Весной малину подкармливают азотом")  # the pace allows: shown before the timer fires
    later.fire()
    clock.now += 2.0
    assert api.calls[-1] == ("edit", "Весной малину подкармливают азотом" + MORE)
    assert [k for k, _ in api.calls] == ["send", "edit"] and not later.due


def test_nothing_held_back_is_shown_once_the_draft_is_closed() -> None:
    api, clock, later, draft = held_back("Весной малину подкармливают азотом")
    draft.close()  # the turn's reply is next
    assert later.cancelled == 1
    clock.now += 1.0
    later.fire()  # a timer that fired anyway
    draft.show("Весной малину подкармливают азотом и калием")
    assert [k for k, _ in api.calls] == ["send"]


def test_flood_control_is_waited_out_without_blocking_the_model() -> None:
    api, clock = Api(), Clock()
    draft = Draft(1, api, interval=0.1, first_chars=10, clock=clock)
    draft.show("Малину весной подкармливают")
    api.fail = RetryLater(5)
    clock.now += 0.2
    draft.show("Малину весной подкармливают азотом")  # refused: wait 5 s
    assert api.fail is None
    clock.now += 4
    draft.show("Малину весной подкармливают азотом и калием")
    assert [k for k, _ in api.calls] == ["send"]  # nothing inside the 5 s
    clock.now += 1.5
    draft.show("Малину весной подкармливают азотом и калием летом")
    assert [k for k, _ in api.calls] == ["send", "edit"]


def test_a_broken_draft_stops_quietly() -> None:
    api, clock = Api(), Clock()
    draft = Draft(1, api, interval=0.1, first_chars=10, clock=clock)
    draft.show("Малину весной подкармливают")
    api.fail = RuntimeError("chat not found")
    clock.now += 1
    draft.show("Малину весной подкармливают азотом")
    clock.now += 1
    draft.show("Малину весной подкармливают азотом и калием")
    assert [k for k, _ in api.calls] == ["send"]


def test_the_view_of_a_long_answer_fits_one_message() -> None:
    api, clock = Api(), Clock()
    draft = Draft(1, api, first_chars=10, clock=clock)
    draft.show("слово " * 2000)
    assert len(api.calls[0][1]) <= TELEGRAM_TEXT_LIMIT


@pytest.fixture(autouse=True)
def drafts_accepted() -> None:
    """Each test starts with a server not yet known to refuse drafts (the module remembers)."""
    stream._drafts_refused.clear()


def test_a_private_chat_streams_into_telegrams_own_draft() -> None:
    api, clock = Api(), Clock()
    draft = Draft(1, api, interval=1.5, first_chars=40, clock=clock, draft_id=5)
    draft.start()
    grow(draft, clock, 0.5)
    assert api.calls[0] == ("draft", "")  # the "Thinking…" placeholder at once
    assert {kind for kind, _ in api.calls} == {"draft"}  # no message sent, none edited
    texts = [t.removesuffix(MORE) for _, t in api.calls[1:]]
    assert texts[0] == WORDS[0]  # the first words at once: the placeholder is already up
    assert all(later.startswith(earlier) for earlier, later in zip(texts, texts[1:]))
    assert len(api.calls) - 1 <= 1 + 6 / 1.5  # the same pace as edits
    assert draft.message_id is None  # the final answer is a new message


def test_a_quiet_model_keeps_the_native_draft_alive() -> None:
    """Telegram keeps a draft 30 s: while the model reads a long prompt it is shown again."""
    later = Later()
    api = Api()
    draft = Draft(1, api, first_chars=1, schedule=later, draft_id=5)
    draft.show("Ближайшие фрагменты")
    assert [delay for delay, _ in later.due] == [stream.DRAFT_REFRESH]
    later.fire()
    assert api.calls == [("draft", "Ближайшие фрагменты" + MORE)] * 2  # shown again, unchanged
    assert [delay for delay, _ in later.due] == [stream.DRAFT_REFRESH]  # and again, while silent
    cancelled = later.cancelled
    draft.close()
    assert later.cancelled == cancelled + 1  # nothing is shown after the answer


def test_an_answer_whole_within_the_first_delay_is_never_drafted() -> None:
    api, clock, later = Api(), Clock(), Later()
    draft = Draft(1, api, first_chars=5, clock=clock, schedule=later, delay=1.0, draft_id=5)
    draft.start()
    assert [delay for delay, _ in later.due] == [1.0]  # the placeholder waits for the delay
    clock.now += 0.3
    draft.show("Малину весной подкармливают азотом.")
    assert api.calls == []  # held until the delay ends
    draft.close()  # the answer is whole: its one message comes next
    assert later.cancelled == 2  # the placeholder and the held text, both cancelled
    assert api.calls == []


def test_a_slow_answer_gets_the_placeholder_after_the_delay_and_then_its_words() -> None:
    api, clock, later = Api(), Clock(), Later()
    draft = Draft(1, api, interval=1.5, first_chars=5, clock=clock, schedule=later, delay=1.0, draft_id=5)
    draft.start()
    clock.now += 1.0
    later.fire()  # the delay ends with nothing written: Telegram's "Thinking…"
    assert api.calls == [("draft", "")]
    draft.show("Малину весной")
    assert api.calls[-1] == ("draft", "Малину весной" + MORE)


def test_words_written_within_the_delay_appear_when_it_ends() -> None:
    api, clock, later = Api(), Clock(), Later()
    draft = Draft(1, api, first_chars=5, clock=clock, schedule=later, delay=1.0, draft_id=5)
    draft.start()
    clock.now += 0.4
    draft.show("Малину весной")
    assert [round(delay, 2) for delay, _ in later.due] == [1.0, 0.6]  # the placeholder; the words
    clock.now += 0.6
    later.due.pop(0)[1]()  # type: ignore[operator]  # the placeholder's turn: text is waiting, still empty
    later.fire()
    assert api.calls[-1] == ("draft", "Малину весной" + MORE)


def test_a_server_without_drafts_gets_a_message_edited_and_is_remembered(env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_STREAM_FIRST_CHARS="5", GROVE_STREAM_FIRST_DELAY="0")
    api = OldServer()
    with streaming("telegram", 1, api, get_settings()) as draft:
        assert draft is not None and draft.draft_id is None  # refused at the placeholder
        draft.show("Малину весной")
    assert [kind for kind, _ in api.calls] == ["send"]
    assert stream._drafts_refused.is_set()
    plain = Api()
    with streaming("telegram", 2, plain, get_settings()) as draft:  # the next turn does not ask again
        assert draft is not None and draft.draft_id is None
        draft.show("Малину весной")
    assert [kind for kind, _ in plain.calls] == ["send"]


def test_groups_never_get_native_drafts(env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_STREAM_FIRST_CHARS="5", GROVE_STREAM_FIRST_DELAY="0")
    api = Api()
    with streaming("telegram", -100123, api, get_settings()) as draft:
        assert draft is not None and draft.draft_id is None
        draft.show("Малину весной")
    assert [kind for kind, _ in api.calls] == ["send"]


def test_a_failed_turn_deletes_its_draft(env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_STREAM_FIRST_CHARS="5", GROVE_STREAM_DRAFTS="false", GROVE_STREAM_FIRST_DELAY="0")
    api = Api()
    with pytest.raises(RuntimeError), streaming("telegram", 1, api, get_settings()) as draft:
        assert draft is not None
        draft.show("Малину весной")
        raise RuntimeError("the turn failed")
    assert [k for k, _ in api.calls] == ["send", "delete"]


def test_nothing_is_streamed_to_the_console_or_when_turned_off(env) -> None:  # type: ignore[no-untyped-def]
    with streaming("console", 1, Api(), get_settings()) as draft:
        assert draft is None
    env(GROVE_STREAM_ANSWERS="false")
    with streaming("telegram", 1, Api(), get_settings()) as draft:
        assert draft is None


# ------------------------------------------------------------------ through the Bot API stand-in


@pytest.fixture
def local(env):  # type: ignore[no-untyped-def]
    with ScriptedLLM() as server:
        env(GROVE_LOCAL_LLM_URL=server.base_url, GROVE_LLM_RETRIES="0", GROVE_STREAM_EDIT_INTERVAL="0.3",
            GROVE_LOCAL_ANSWER_QUOTE="false", GROVE_LOCAL_ANSWER_MAX_CHARS="20000",
            GROVE_STREAM_DRAFTS="false",  # the edited message (groups, older servers); drafts below
            GROVE_STREAM_FIRST_DELAY="0")  # streamed from the first words (the delay has tests of its own)
        yield server


def stored_answer(url: str, user_id: int) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute("select content from chat_messages where user_id = %s and role = 'assistant'"
                           " order by id desc limit 1", (user_id,)).fetchone()
    return row[0]


def edits_of(standin: TelegramStandin, message_id: int) -> list[str]:
    return [c["params"]["text"] for c in standin.calls("editMessageText")
            if int(c["params"]["message_id"]) == message_id and c.get("response", {}).get("ok", True)]


@pytest.mark.asyncio
async def test_a_streamed_answer_is_edited_in_order_and_ends_as_the_stored_answer(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int
) -> None:
    answer = ("Малину весной подкармливают азотом: пятнадцать граммов мочевины на квадратный метр. "
              "Летом ей нужен калий и фосфор, а азот после июля не вносят, чтобы побеги успели вызреть.")
    local.script(trickle(0.05, text(answer)))
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, "Чем подкормить малину весной?")
        messages = await standin.wait_for_bot_messages_async(user_id, 3, timeout=120)
        draft = messages[2]
        await standin.wait_for_calls_async("editMessageText", 2, timeout=60)
        final = await _settled(standin, user_id, draft["message_id"])
    views = edits_of(standin, draft["message_id"])
    assert draft["text"].endswith(MORE)  # the first words, shown while the rest was written
    streamed = [draft["text"], *views[:-1]]
    assert all(v.endswith(MORE) for v in streamed)
    cores = [v.removesuffix(MORE) for v in streamed]
    assert all(later.startswith(earlier) for earlier, later in zip(cores, cores[1:]))  # edits in order
    assert len(standin.bot_messages(user_id)) == 3  # the answer replaced the draft, no second message
    assert final == markdown_html(stored_answer(store, user_id))
    assert final.split() == answer.split()


ANSWER = ("Малину весной подкармливают азотом: пятнадцать граммов мочевины на квадратный метр. "
          "Летом ей нужен калий и фосфор, а азот после июля не вносят, чтобы побеги успели вызреть.")


@pytest.mark.asyncio
async def test_a_private_answer_streams_as_telegrams_own_draft_and_is_sent_once(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int, env  # type: ignore[no-untyped-def]
) -> None:
    env(GROVE_STREAM_DRAFTS="true")
    local.script(trickle(0.05, text(ANSWER)))
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, "Чем подкормить малину весной?")
        messages = await standin.wait_for_bot_messages_async(user_id, 3, timeout=120)
    drafts = standin.drafts(user_id)
    assert drafts[0]["text"] == ""  # Telegram's "Thinking…" placeholder before anything else
    assert len({d["draft_id"] for d in drafts}) == 1  # one draft, animated by the client
    views = [d["text"] for d in drafts[1:]]
    assert views and all(v.endswith(MORE) for v in views)
    cores = [v.removesuffix(MORE) for v in views]
    assert all(later.startswith(earlier) for earlier, later in zip(cores, cores[1:]))  # in order
    assert standin.calls("editMessageText") == []  # no message was edited …
    [sent] = [c for c in standin.calls("sendMessage") if c["params"]["text"] == messages[2]["text"]]
    assert drafts[-1]["time"] <= sent["time"]  # … and the answer came once, after its draft
    assert messages[2]["text"] == stored_answer(store, user_id)
    assert messages[2]["text"].split() == ANSWER.split()


@pytest.mark.asyncio
async def test_an_answer_whole_within_the_first_second_is_sent_as_one_message_with_no_draft(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int, env  # type: ignore[no-untyped-def]
) -> None:
    env(GROVE_STREAM_DRAFTS="true", GROVE_STREAM_FIRST_DELAY="30")  # far longer than this answer takes
    local.script(text(ANSWER))
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, "Чем подкормить малину весной?")
        messages = await standin.wait_for_bot_messages_async(user_id, 3, timeout=120)
    assert standin.drafts(user_id) == []  # no placeholder, no draft
    assert standin.calls("editMessageText") == []
    assert messages[2]["text"] == stored_answer(store, user_id)
    assert messages[2]["text"].split() == ANSWER.split()


@pytest.mark.asyncio
async def test_an_older_bot_api_server_gets_the_edited_message(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int, env  # type: ignore[no-untyped-def]
) -> None:
    env(GROVE_STREAM_DRAFTS="true")
    standin.refuse_drafts = True
    local.script(trickle(0.05, text(ANSWER)))
    draft, final = await _asked_in_a_draft(standin, user_id, "Чем подкормить малину весной?")
    assert standin.drafts(user_id) == []
    assert edits_of(standin, draft["message_id"])  # streamed by edits instead
    assert len(standin.bot_messages(user_id)) == 3
    assert final == markdown_html(stored_answer(store, user_id))


FACTS = ["Ремонтантную малину весной подкармливают азотом: 15 г мочевины на квадратный метр.",
         "Осенью побеги ремонтантной малины срезают под корень."]


def store_facts(user_id: int) -> None:
    from nodes.store.document_store import ChunkRecord, store_document
    from nodes.embedding.embedder import get_embedder
    from grove.core.ingest_types import ExtractedDocument

    store_document.fn(user_id, ExtractedDocument(source_type="pdf", source_identifier="малина.pdf",
                                                 text="\n\n".join(FACTS)),
                      [ChunkRecord(position=i, text=t, page=i + 1) for i, t in enumerate(FACTS)],
                      get_embedder().embed_documents(FACTS))


@pytest.mark.asyncio
async def test_a_grounded_answer_shows_its_passages_before_the_model_writes(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int, env  # type: ignore[no-untyped-def]
) -> None:
    from nodes.answering.quote import QUOTE_LEAD

    env(GROVE_LOCAL_ANSWER_OPENING="0")  # one request: the model's words after the whole prompt
    facts = FACTS
    store_facts(user_id)
    answer = "Весной малину подкармливают азотом, пятнадцать граммов мочевины на квадратный метр [1]."
    local.script(trickle(0.3, text(answer)))  # a slow model: its first word comes after a while
    draft, final = await _asked_in_a_draft(standin, user_id, "Чем подкормить малину весной?")
    # The first thing the user sees is the document's own passage, before any word of the model.
    assert draft["text"].startswith(f"{QUOTE_LEAD}\n«{facts[0]}»") and draft["text"].endswith(MORE)
    views = [v.removesuffix(MORE) for v in edits_of(standin, draft["message_id"])[:-1]]
    assert views and all(v.endswith(f"«{facts[0]}»") for v in views)  # the model's words above it
    assert any(v.startswith("Весной") for v in views)
    assert final == markdown_html(stored_answer(store, user_id)) and final.startswith("Весной малину")
    assert len(standin.bot_messages(user_id)) == 3  # the answer replaced the draft


def test_the_chat_flow_shows_its_answer_only_in_the_draft_it_is_handed(
    local: ScriptedLLM, store: str, user_id: int, other_user_id: int, env  # type: ignore[no-untyped-def]
) -> None:
    """The draft reaches the model's calls as a parameter: a chat turn handed a `show` gets the
    passages that answer at once, then the model's words above them; a turn handed none shows
    nothing, even while a draft is open around it."""
    from flows.chat import chat
    from nodes.answering.quote import QUOTE_LEAD
    from nodes.store.user_state import session_of

    env(GROVE_LOCAL_ANSWER_OPENING="0")
    answer = "Весной малину подкармливают азотом, пятнадцать граммов мочевины на квадратный метр [1]."
    local.script(text(answer), text(answer))
    seen: list[str] = []
    store_facts(user_id)
    chat("Чем подкормить малину весной?", user_id, session_of.fn(user_id, user_id), show=seen.append)
    passages = seen[0]
    assert passages.startswith(f"{QUOTE_LEAD}\n«{FACTS[0]}»")  # before any word of the model
    assert len(seen) > 2 and all(s.endswith(f"\n\n{passages}") for s in seen[1:])  # the words above them
    assert seen[-1] == f"{answer}\n\n{passages}"
    api = Api()
    store_facts(other_user_id)
    with streaming("telegram", -100123, api, get_settings()) as draft:  # a draft open, not handed to the turn
        assert draft is not None
        chat("Чем подкормить малину весной?", other_user_id, session_of.fn(other_user_id, other_user_id))
    assert len(local.requests) == 2 and api.calls == []


@pytest.mark.asyncio
async def test_a_deadline_with_the_passages_on_screen_ends_with_them_not_an_apology(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int, env  # type: ignore[no-untyped-def]
) -> None:
    """The model writes too slowly for the turn's deadline while the user reads its passage (in
    Telegram's draft): the reply is that passage and its source, marked as cut, and it is stored."""
    from flows.texts import ANSWER_CUT, APOLOGY

    env(GROVE_STREAM_DRAFTS="true", GROVE_LOCAL_ANSWER_OPENING="0", GROVE_TURN_DEADLINE="8")
    store_facts(user_id)
    words = " ".join(["Весной малину подкармливают азотом, пятнадцать граммов мочевины на метр."] * 20)
    local.script(trickle(1.0, text(words)))  # a word a second: the deadline comes first
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, "Чем подкормить малину весной?")
        messages = await standin.wait_for_bot_messages_async(user_id, 3, timeout=120)
    reply = messages[2]["text"]
    assert reply.startswith(ANSWER_CUT) and APOLOGY not in reply
    assert FACTS[0] in reply  # the passage the user was reading
    assert "Информация взята из:" in reply and "малина.pdf" in reply  # with its source
    assert any(FACTS[0] in d["text"] for d in standin.drafts(user_id))  # it was on screen before
    assert markdown_html(stored_answer(store, user_id)) == reply  # the history holds what the user got


@pytest.mark.asyncio
async def test_a_model_measured_slow_is_given_the_time_its_prompt_needs_past_the_turns_deadline(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int, env,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the default deadline, a local answer is given what the model's measured speed says its
    prompt and token cap need (here more than the turn's 4 s): the user gets the whole answer, and
    the answer's timing is the speed the next turn's limit starts from."""
    from flows.texts import ANSWER_CUT
    from grove.core.settings import Settings
    from nodes.answering import model_speed

    env(GROVE_STREAM_DRAFTS="true", GROVE_LOCAL_ANSWER_OPENING="0", GROVE_LOCAL_TOKENS_PER_S="1")  # a slow guess
    monkeypatch.setattr(Settings, "chat_deadline", property(lambda self: 4.0))  # the default, made short
    model_speed.forget()
    store_facts(user_id)
    words = "Весной малину подкармливают азотом: пятнадцать граммов мочевины на квадратный метр, раз в сезон."
    local.script(trickle(0.5, text(words)))  # ≈ 7 s: past the turn's 4 s
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, "Чем подкормить малину весной?")
        messages = await standin.wait_for_bot_messages_async(user_id, 3, timeout=120)
    reply = messages[2]["text"]
    assert not reply.startswith(ANSWER_CUT) and "пятнадцать граммов мочевины" in reply
    speed = model_speed.local_speed()
    assert speed.measured >= 1 and 0.5 < speed.tokens_per_s < 5.0  # pieces every 0.5 s, measured


@pytest.mark.asyncio
async def test_the_first_words_come_from_the_passage_and_the_rest_continues_them(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int, env  # type: ignore[no-untyped-def]
) -> None:
    from nodes.answering.quote import QUOTE_LEAD
    from tests.support.scripted_llm import slow

    env(GROVE_LOCAL_ANSWER_OPENING="3")
    store_facts(user_id)
    local.script(text("Весной малину подкармливают азотом [1]. Этот текст не нужен."),
                 slow(1.5, trickle(0.05, text(" азотом: пятнадцать граммов мочевины на квадратный метр [1]."))))
    draft, final = await _asked_in_a_draft(standin, user_id, "Чем подкормить малину весной?")
    opening_request, rest_request = local.requests[-2:]
    assert "целиком" not in opening_request["prompt"] and FACTS[0] in opening_request["prompt"]
    assert rest_request["prompt"].count(FACTS[0]) == 2  # the passage, then its fragment whole
    opening = "Весной малину подкармливают"
    assert rest_request["prompt"].endswith(f"<|im_start|>assistant\n{opening}")
    prefix = opening_request["prompt"][:opening_request["prompt"].index(FACTS[0]) + len(FACTS[0])]
    assert rest_request["prompt"].startswith(prefix)  # the server's cache keeps the rules and passage
    # Seen in order: the passage alone, then the first words above it while the rest was being read.
    passage = draft["text"].removesuffix(MORE)
    assert passage.startswith(f"{QUOTE_LEAD}\n«{FACTS[0]}»")
    views = [v.removesuffix(MORE) for v in edits_of(standin, draft["message_id"])[:-1]]
    assert f"{opening}\n\n{passage}" in views
    assert all(v.endswith(passage) for v in views) and not any("не нужен" in v for v in views)
    assert final == markdown_html(stored_answer(store, user_id))
    assert final.startswith(f"{opening} азотом: пятнадцать граммов мочевины") and "не нужен" not in final
    assert len(standin.bot_messages(user_id)) == 3


@pytest.mark.asyncio
async def test_a_long_streamed_answer_is_split_with_the_draft_as_its_first_piece(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int
) -> None:
    answer = varied_answer(seed=3, paragraphs=8, sentences=40, words=3)  # ≈ 7,500 characters
    local.script(trickle(0.0005, text(answer)))
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, "Расскажи всё про малину")
        messages = await standin.wait_for_bot_messages_async(user_id, 4, timeout=120)
        first = await _settled(standin, user_id, messages[2]["message_id"])
    pieces = [first] + [m["text"] for m in standin.bot_messages(user_id)[3:]]
    assert len(pieces) == 2 and all(len(p) <= TELEGRAM_TEXT_LIMIT for p in pieces)
    assert not first.endswith(MORE)
    assert edits_of(standin, messages[2]["message_id"])[-1] == first  # the draft was edited into piece one
    assert " ".join(pieces).split() == answer.split() == stored_answer(store, user_id).split()


async def _asked_in_a_draft(standin: TelegramStandin, user_id: int, question: str) -> tuple[dict, str]:
    """Ask the real bot in chat mode; the draft message as first sent, and its text once settled."""
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, question)
        messages = await standin.wait_for_bot_messages_async(user_id, 3, timeout=120)
        draft = messages[2]
        return draft, await _settled(standin, user_id, draft["message_id"])


async def _settled(standin: TelegramStandin, user_id: int, message_id: int, timeout: float = 60) -> str:
    """The message's text once the turn's reply has been delivered: no «…» left, and in the store
    the user's updates finished and no reply to them unsent (the outbox marks a reply sent once
    all its pieces went out, so a split answer's later pieces have arrived too)."""
    import asyncio
    import time

    from grove.store import inbox, outbox

    def delivered() -> bool:
        return inbox.next_of(user_id) is None and not outbox.unsent(chat_id=user_id)

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        message = next(m for m in standin.bot_messages(user_id) if m["message_id"] == message_id)
        if not message["text"].endswith(MORE) and await asyncio.to_thread(delivered):
            return next(m for m in standin.bot_messages(user_id) if m["message_id"] == message_id)["text"]
        await asyncio.sleep(0.05)
    raise AssertionError(f"message {message_id} still shows a draft, or the turn's reply is not delivered")


LONG_ANSWER = " ".join(["Весной малину подкармливают азотом, пятнадцать граммов мочевины на метр."] * 8)


async def _until(condition, timeout: float = 60):  # type: ignore[no-untyped-def]
    import asyncio
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if (found := condition()):
            return found
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.mark.asyncio
async def test_the_stop_button_under_an_edited_draft_stops_the_model_and_keeps_what_was_shown(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int
) -> None:
    """«Стоп» under the streamed message: the model's stream is hung up (the server sees its client
    go), and the reply is what was on screen, marked as stopped, stored as the user got it."""
    from flows.texts import ANSWER_STOPPED

    local.script(trickle(0.3, text(LONG_ANSWER)))  # ~30 s of words: the press comes long before the end
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, "Чем подкормить малину весной?")
        draft = (await standin.wait_for_bot_messages_async(user_id, 3, timeout=120))[2]
        [[button]] = draft["reply_markup"]["inline_keyboard"]
        assert button["text"] == "⏹ Стоп"
        await _until(lambda: len(edits_of(standin, draft["message_id"])) >= 2)  # some words on screen
        shown = edits_of(standin, draft["message_id"])[-1].removesuffix(MORE)
        standin.press_button(user_id, button["callback_data"], message_id=draft["message_id"])

        def replaced() -> str | None:  # the stopped words end «…» too: the marker tells the reply
            text = next(m for m in standin.bot_messages(user_id) if m["message_id"] == draft["message_id"])["text"]
            return text if text.startswith(ANSWER_STOPPED) else None
        final = await _until(replaced)
        await _until(lambda: len(standin.callback_answers()) >= 2)  # the mode's button, then «Стоп»
    assert local.abandoned and local.abandoned[0] > 0  # the model was not left writing to no one
    assert final.startswith(ANSWER_STOPPED)
    assert shown.split()[:5] == final.removeprefix(ANSWER_STOPPED).split()[:5]  # what the user was reading
    assert len(final.split()) < len(LONG_ANSWER.split())
    message = next(m for m in standin.bot_messages(user_id) if m["message_id"] == draft["message_id"])
    assert not message.get("reply_markup")  # the button went with the draft
    assert len(standin.bot_messages(user_id)) == 3  # the reply replaced the draft
    assert final == markdown_html(stored_answer(store, user_id))
    assert standin.callback_answers()[-1].get("text") == "Останавливаю"


@pytest.mark.asyncio
async def test_telegrams_own_stop_on_a_draft_stops_the_model_and_keeps_what_was_shown(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int, env  # type: ignore[no-untyped-def]
) -> None:
    """Bot API 10.3: the draft is sent with `can_stop`; the user's stop comes as a
    `stopped_message_generation` update, which the bot asks for by name."""
    from flows.texts import ANSWER_STOPPED

    env(GROVE_STREAM_DRAFTS="true")
    local.script(trickle(0.3, text(LONG_ANSWER)))
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, "Чем подкормить малину весной?")
        await _until(lambda: len([d for d in standin.drafts(user_id) if d["text"]]) >= 2)
        assert standin.stop_draft(user_id) is not None  # delivered: the bot asked for such updates
        reply = (await standin.wait_for_bot_messages_async(user_id, 3, timeout=60))[2]["text"]
    assert all(str(c["params"].get("can_stop")).lower() == "true" for c in standin.calls("sendMessageDraft"))
    assert local.abandoned and local.abandoned[0] > 0
    assert reply.startswith(ANSWER_STOPPED) and len(reply.split()) < len(LONG_ANSWER.split())
    assert reply == markdown_html(stored_answer(store, user_id))


@pytest.mark.asyncio
async def test_a_stop_pressed_after_the_answer_does_nothing(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int
) -> None:
    local.script(trickle(0.02, text(ANSWER)))
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, "Чем подкормить малину весной?")
        draft = (await standin.wait_for_bot_messages_async(user_id, 3, timeout=120))[2]
        data = draft["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        final = await _settled(standin, user_id, draft["message_id"])
        answered = len(standin.callback_answers())  # the mode's button
        standin.press_button(user_id, data, message_id=draft["message_id"], strict=False)  # an old screen
        await _until(lambda: len(standin.callback_answers()) > answered)
    assert "text" not in standin.callback_answers()[-1]  # answered quietly: nothing was stopped
    assert len(standin.bot_messages(user_id)) == 3
    assert next(m for m in standin.bot_messages(user_id) if m["message_id"] == draft["message_id"])["text"] == final
    assert final.split() == ANSWER.split()


@pytest.fixture
def remote(env):  # type: ignore[no-untyped-def]
    """The scripted server as a remote OpenAI-compatible model (an API key is set)."""
    with ScriptedLLM() as server:
        env(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=server.base_url, GROVE_LLM_RETRIES="0",
            GROVE_STREAM_DRAFTS="true", GROVE_PLANNER="off")
        yield server


@pytest.mark.asyncio
async def test_a_remote_answer_streams_into_telegrams_draft_and_is_sent_once(
    standin: TelegramStandin, remote: ScriptedLLM, store: str, user_id: int
) -> None:
    """The remote model's search call comes streamed in pieces and is put together, then its answer
    streams into the draft as it comes; the final message is sent once."""
    from tests.support.scripted_llm import tool_call

    store_facts(user_id)
    remote.script(tool_call({"query": "подкормка малины весной"}), trickle(0.15, text(ANSWER)))
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, "Чем подкормить малину весной?")
        await _until(lambda: any(ANSWER.split()[0] in d["text"] for d in standin.drafts(user_id)))
        assert len(standin.bot_messages(user_id)) == 2  # the words are in the draft, no reply sent yet
        reply = (await standin.wait_for_bot_messages_async(user_id, 3, timeout=60))[2]["text"]
    first, second = remote.requests
    assert "tools" in first and first.get("stream") is True  # its search, streamed as a tool call
    assert second.get("stream") is True and "tools" not in second
    assert "подкормка малины весной" in json.dumps(second, ensure_ascii=False)  # the gathered call ran
    partial = [d["text"] for d in standin.drafts(user_id) if d["text"] and d["text"] != ANSWER]
    assert partial and all(len(d.split()) < len(ANSWER.split()) for d in partial)  # it grew as it came
    assert reply.split()[:4] == ANSWER.split()[:4]
    assert len(standin.bot_messages(user_id)) == 3


@pytest.mark.asyncio
async def test_telegrams_stop_on_a_remote_answer_closes_its_stream_and_keeps_what_was_shown(
    standin: TelegramStandin, remote: ScriptedLLM, store: str, user_id: int
) -> None:
    from flows.texts import ANSWER_STOPPED

    from tests.support.scripted_llm import tool_call

    store_facts(user_id)
    remote.script(tool_call({"query": "подкормка малины"}), trickle(0.3, text(LONG_ANSWER)))
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, "Чем подкормить малину весной?")
        await _until(lambda: len([d for d in standin.drafts(user_id) if d["text"]]) >= 2)
        assert standin.stop_draft(user_id) is not None
        reply = (await standin.wait_for_bot_messages_async(user_id, 3, timeout=60))[2]["text"]
    assert remote.abandoned and remote.abandoned[0] > 0  # the remote stream was closed
    assert reply.startswith(ANSWER_STOPPED) and len(reply.split()) < len(LONG_ANSWER.split())
    assert reply == markdown_html(stored_answer(store, user_id))


@pytest.mark.asyncio
async def test_a_remote_answer_without_a_search_streams_too(
    standin: TelegramStandin, remote: ScriptedLLM, store: str, user_id: int
) -> None:
    remote.script(trickle(0.15, text(ANSWER)))  # it answers at once, offered its tool
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        standin.send_text(user_id, "Чем подкормить малину весной?")
        await _until(lambda: any(d["text"] for d in standin.drafts(user_id)))
        reply = (await standin.wait_for_bot_messages_async(user_id, 3, timeout=60))[2]["text"]
    [request] = remote.requests
    assert "tools" in request and request.get("stream") is True
    partial = [d["text"] for d in standin.drafts(user_id) if d["text"]]
    assert partial and len(partial[0].split()) < len(ANSWER.split())
    assert reply.split()[:4] == ANSWER.split()[:4]
