"""nodes/telegram/reply.py: splitting at Telegram's limit, the console's printed replies, a reply sent at once
through the Bot API stand-in outside a turn, and one queued in the outbox inside a turn (database tests).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from grove.core.messages import Button, Reply
from grove.store import jobs
from grove.store.db import unit_of_work
from grove.store.outbox import Source
from grove.core.settings import get_settings
from nodes.telegram.api import LoopBot
from nodes.telegram.reply import TELEGRAM_TEXT_LIMIT, Sender, send_reply, split_text
from tests.support.telegram_standin import TelegramStandin

CHAT = 5151

# ------------------------------------------------------------------------------------------ split_text


def test_a_text_within_the_limit_is_one_piece_trimmed() -> None:
    assert TELEGRAM_TEXT_LIMIT == 4096
    exact = "я" * 4096
    assert split_text(exact) == [exact]
    assert split_text("  \n Ответ готов. \n") == ["Ответ готов."]
    assert split_text("") == [""] and split_text(" \n ") == [""]


def test_paragraphs_are_kept_whole_when_they_fit() -> None:
    paragraphs = [f"{n}. " + "Малину поливают по бороздам. " * 40 for n in range(1, 8)]  # ~1,200 chars each
    text = "\n\n".join(p.strip() for p in paragraphs)
    pieces = split_text(text)
    assert len(pieces) == 3 and all(len(p) <= 4096 for p in pieces)
    assert [p[:2] for p in pieces] == ["1.", "4.", "7."]  # every piece starts with a paragraph
    assert "\n\n".join(pieces) == text  # nothing lost, nothing added


def test_without_blank_lines_a_line_break_then_a_sentence_end_then_a_space() -> None:
    lines = "\n".join(f"Строка {n} про обрезку смородины осенью." for n in range(200))
    assert all(p.startswith("Строка") and p.endswith("осенью.") for p in split_text(lines))

    sentences = " ".join(f"Предложение {n} о подкормке." for n in range(300))
    pieces = split_text(sentences)
    assert all(p.endswith("подкормке.") for p in pieces) and " ".join(pieces) == sentences

    words = " ".join(["слово"] * 1500)  # 8,999 chars, no sentence end
    pieces = split_text(words)
    assert [len(p) for p in pieces] == [4091, 4091, 815] and " ".join(pieces) == words


def test_an_early_boundary_is_not_taken_a_later_weaker_one_is() -> None:
    # A blank line after 100 chars would leave a tiny first piece: the last space before 4,096 wins.
    text = "а" * 100 + "\n\n" + " ".join(["побег"] * 900)
    first = split_text(text)[0]
    assert len(first) > 4096 // 3 and first.startswith("а" * 100 + "\n\nпобег") and first.endswith("побег")


def test_one_endless_word_is_cut_hard_at_the_limit() -> None:
    assert [len(p) for p in split_text("ю" * 9000)] == [4096, 4096, 808]
    assert split_text("abcdefghij", limit=4) == ["abcd", "efgh", "ij"]


# ------------------------------------------------------------------------------------------ console


def test_the_console_prints_the_reply_and_its_buttons(capsys: pytest.CaptureFixture[str]) -> None:
    reply = Reply(chat_id=1, text="Выберите режим", buttons=[[Button(label="Чат", data="m:chat"),
                                                             Button(label="Документы", data="m:docs")]])
    assert send_reply("console", reply) == []
    assert capsys.readouterr().out == "\n🤖 Выберите режим\n   [Чат]  [Документы]\n"
    send_reply("console", Reply(chat_id=1, text="## Полив\n**Раз** в неделю, `10 л`", markdown=True))
    assert capsys.readouterr().out == "\n🤖 Полив\nРаз в неделю, 10 л\n"  # Markdown shown without its markers


# ------------------------------------------------------------------------------------------ Telegram, outside a turn


@pytest.fixture
def tg(env) -> Iterator[TelegramStandin]:  # type: ignore[no-untyped-def]
    with TelegramStandin() as server:
        env(TELEGRAM_BOT_TOKEN="123456:REPLY-TOKEN", GROVE_TELEGRAM_API_URL=server.api_url)
        yield server


@pytest.fixture
def sender(tg: TelegramStandin) -> Iterator[Sender]:
    """The sender an entry point builds, its Bot pointed at the stand-in."""
    api = LoopBot.open(get_settings())
    yield Sender(api)
    api.close()


def test_outside_a_turn_a_long_reply_is_sent_at_once_in_pieces(tg: TelegramStandin, sender: Sender) -> None:
    text = "\n\n".join(f"Абзац {n}. " + "Голубике нужна кислая почва. " * 50 for n in range(5))
    reply = Reply(chat_id=CHAT, text=text, buttons=[[Button(label="👍", data="rate:1")]])
    ids = send_reply("telegram", reply, sender)
    messages = tg.bot_messages(CHAT)
    assert [m["message_id"] for m in messages] == ids and len(ids) == len(split_text(text)) == 3
    assert [m["text"] for m in messages] == split_text(text)
    # The buttons go under the last piece only.
    assert [m["reply_markup"] for m in messages[:-1]] == [None, None]
    assert messages[-1]["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == "rate:1"


def test_a_models_markdown_goes_as_telegram_html(tg: TelegramStandin, sender: Sender) -> None:
    send_reply("telegram", Reply(chat_id=CHAT, text="**Полив**: раз в неделю, 10 л & не больше", markdown=True), sender)
    [message] = tg.bot_messages(CHAT)
    assert (message["text"], message["parse_mode"]) == ("<b>Полив</b>: раз в неделю, 10 л &amp; не больше", "HTML")


def test_a_reply_replacing_a_draft_edits_it_instead_of_sending_anew(tg: TelegramStandin, sender: Sender) -> None:
    [draft] = send_reply("telegram", Reply(chat_id=CHAT, text="Голубику поливают…"), sender)
    ids = send_reply("telegram", Reply(chat_id=CHAT, text="Голубику поливают часто и понемногу.",
                                       replaces_message_id=draft), sender)
    assert ids == [draft]
    assert [m["text"] for m in tg.bot_messages(CHAT)] == ["Голубику поливают часто и понемногу."]
    assert len(tg.calls("editMessageText")) == 1


# ------------------------------------------------------------------------------------------ inside a turn (database)


def _kind(user_id: int) -> str:
    return f"reply-test-{user_id}"


@pytest.fixture
def db(pg_url: str, user_id: int) -> Iterator[str]:
    """The database, with this test's outbox rows and jobs removed afterwards (a bot's sweep would send them)."""
    yield pg_url
    with psycopg.connect(pg_url) as conn:
        conn.execute("delete from outbox where chat_id = %s", (user_id,))
        conn.execute("delete from jobs where kind = %s", (_kind(user_id),))


def _rows(url: str, chat_id: int) -> list[dict[str, Any]]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        return conn.execute("select id, update_id, job_id, payload, edit_of, sent_at from outbox"
                            " where chat_id = %s order by id", (chat_id,)).fetchall()


def _ack_id(url: str, job_id: int) -> int | None:
    with psycopg.connect(url) as conn:
        row = conn.execute("select ack_id from jobs where id = %s", (job_id,)).fetchone()
    assert row is not None
    return row[0]


def test_inside_a_turn_a_reply_is_queued_not_sent(db: str, user_id: int) -> None:
    reply = Reply(chat_id=user_id, text="Документ принят", buttons=[[Button(label="Отмена", data="cancel")]])
    assert send_reply("telegram", reply, source=Source(update_id=user_id)) == []  # queued, not sent (no bot here)
    [row] = _rows(db, user_id)
    assert (row["update_id"], row["job_id"], row["edit_of"], row["sent_at"]) == (user_id, None, None, None)
    assert Reply.model_validate(row["payload"]) == reply


def test_an_acknowledgement_becomes_the_jobs_message_and_the_result_edits_it(db: str, user_id: int) -> None:
    job = jobs.enqueue(_kind(user_id), user_id, user_id, {"file": "малина.pdf"})
    send_reply("telegram", Reply(chat_id=user_id, text="⏳ Индексирую малина.pdf", acknowledges_job=job),
               source=Source(update_id=user_id))
    [ack] = _rows(db, user_id)
    assert _ack_id(db, job) == ack["id"]

    send_reply("telegram", Reply(chat_id=user_id, text="✅ малина.pdf проиндексирован", edits_reply=ack["id"]),
               source=Source(job_id=job))
    result = _rows(db, user_id)[1]
    assert (result["job_id"], result["edit_of"]) == (job, ack["id"])


def test_a_failed_turn_queues_nothing_and_acknowledges_nothing(db: str, user_id: int) -> None:
    job = jobs.enqueue(_kind(user_id), user_id, user_id, {"file": "голубика.pdf"})
    with pytest.raises(RuntimeError), unit_of_work():
        send_reply("telegram", Reply(chat_id=user_id, text="⏳ Индексирую", acknowledges_job=job),
                   source=Source(update_id=user_id))
        raise RuntimeError("the turn failed")
    assert _rows(db, user_id) == [] and _ack_id(db, job) is None


# ------------------------------------------------------------------------------------------ the Bot handed in


class MemoryBot:
    """A `BotApi` in memory, as a test hands one in (httpx's MockTransport plays the same part)."""

    def __init__(self, refuse_html: bool = False, flood: int = 0) -> None:
        self.sent: list[dict[str, Any]] = []
        self.refuse_html, self.flood = refuse_html, flood

    def send_message(self, chat_id: int, text: str, *, parse_mode: str | None = None,
                     reply_markup: Any = None) -> Any:
        from types import SimpleNamespace

        from telegram.error import BadRequest, RetryAfter

        if self.flood:
            self.flood -= 1
            raise RetryAfter(0)
        if self.refuse_html and parse_mode == "HTML":
            raise BadRequest("Can't parse entities: unsupported start tag")
        self.sent.append({"chat_id": chat_id, "text": text, "parse_mode": parse_mode, "markup": reply_markup})
        return SimpleNamespace(message_id=len(self.sent))


def test_the_sender_speaks_through_the_bot_it_is_handed() -> None:
    bot = MemoryBot(flood=1)
    ids = Sender(bot).send_now(Reply(chat_id=CHAT, text="**Полив** раз в неделю", markdown=True,  # type: ignore[arg-type]
                                     buttons=[[Button(label="👍", data="rate:1")]]))
    assert ids == [1]  # flood control waited out, then sent once
    [message] = bot.sent
    assert (message["text"], message["parse_mode"]) == ("<b>Полив</b> раз в неделю", "HTML")
    assert message["markup"].inline_keyboard[0][0].callback_data == "rate:1"


def test_html_the_bot_refuses_goes_again_as_plain_text() -> None:
    bot = MemoryBot(refuse_html=True)
    Sender(bot).send_now(Reply(chat_id=CHAT, text="**Полив** раз в неделю", markdown=True))  # type: ignore[arg-type]
    assert [(m["text"], m["parse_mode"]) for m in bot.sent] == [("Полив раз в неделю", None)]


def test_a_sender_with_no_bot_cannot_send_and_shows_no_views() -> None:
    with pytest.raises(RuntimeError, match="TELEGRAM_BOT_TOKEN"):
        Sender().send_now(Reply(chat_id=CHAT, text="привет"))
    assert Sender().drafts() is None
    Sender().answer_callback("telegram", "query-1")  # nothing to stop: no bot, no call, no error


def test_a_bot_opened_while_telegram_is_out_of_reach_meets_it_at_its_first_call(env) -> None:  # type: ignore[no-untyped-def]
    """A worker started during a Telegram outage starts; its calls fail (and its replies wait in the
    outbox) until Telegram answers again."""
    from telegram.error import NetworkError

    from tests.support.ports import free_port

    env(TELEGRAM_BOT_TOKEN="123456:REPLY-TOKEN", GROVE_TELEGRAM_API_URL=f"http://127.0.0.1:{free_port()}")
    api = LoopBot.open(get_settings())  # nothing is listening there: no error yet
    try:
        with pytest.raises(NetworkError):
            api.send_message(CHAT, "привет")
        with TelegramStandin() as server:  # a Bot API that answers: getMe comes with the first call, not before
            env(GROVE_TELEGRAM_API_URL=server.api_url)
            again = LoopBot.open(get_settings())
            assert server.calls() == []
            assert again.send_message(CHAT, "привет").message_id > 0
            assert [c["method"] for c in server.calls()][:2] == ["getMe", "sendMessage"]
            again.close()
    finally:
        api.close()
