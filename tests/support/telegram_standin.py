"""A local stand-in for the Telegram Bot API, for driving a real python-telegram-bot bot in tests.

Why it exists: mocking PTB's ``Bot`` methods only tests the mocks. This serves Telegram's
wire protocol instead - the same URLs, the request encodings PTB really uses, the JSON shapes
and error bodies Telegram returns - over real HTTP on 127.0.0.1, so the bot under test runs
unchanged (polling, update parsing, handler dispatch, file download) while the test plays the
user (``send_text``, ``press_button``, ``send_document`` ...) and asserts on what the bot sent.

Usage::

    with TelegramStandin() as tg:
        app = (ApplicationBuilder().token("123456:TEST")
               .base_url(tg.api_url + "/bot").base_file_url(tg.api_url + "/file/bot").build())
        ...  # start polling
        tg.send_text(42, "/start")
        [reply] = tg.wait_for_bot_messages(42, 1)  # in async tests: await tg.wait_for_bot_messages_async(42, 1)

Where it is stricter than a plain fake, it is so because Telegram is: text with bad HTML or
Markdown, over-long texts, edits that change nothing, 65-byte callback data, unanswerable
callback queries and downloads over 20 MB are rejected with Telegram's own error texts.

Deliberate simplifications:

* One bot per stand-in: any token is accepted (and recorded); all share one identity and one
  update queue.
* Private chats only: a user's chat id is their user id.
* Text is stored verbatim: ``parse_mode`` markup is validated, but not turned into entities.
"""

from __future__ import annotations

import asyncio
import copy
import html
import html.parser
import itertools
import json
import mimetypes
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn, TypeVar

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

JSONDict = dict[str, Any]
T = TypeVar("T")

MAX_TEXT_LENGTH = 4096
MAX_CAPTION_LENGTH = 1024
MAX_DOWNLOAD_SIZE = 20 * 1024 * 1024  # what getFile lets a bot download
CHAT_ACTIONS = frozenset(
    "typing upload_photo record_video upload_video record_voice upload_voice upload_document "
    "choose_sticker find_location record_video_note upload_video_note".split()
)
# PTB posts every non-string parameter JSON-encoded inside a form field, and strings raw; these
# parameters are strings, so a text of "123" or "true" must not be JSON-decoded.
_STRING_PARAMS = frozenset(
    "text caption parse_mode callback_query_id action url secret_token ip_address file_id "
    "inline_message_id business_connection_id language_code message_effect_id emoji title "
    "performer description short_description name document voice audio video photo "
    "video_note".split()
)
_COMMAND_RE = re.compile(r"(?<!\S)/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,})?")
_BOT_COMMAND_NAME_RE = re.compile(r"[a-z0-9_]{1,32}")
_BUTTON_ACTIONS = (
    "callback_data url web_app login_url switch_inline_query switch_inline_query_current_chat "
    "switch_inline_query_chosen_chat copy_text callback_game pay".split()
)


class TelegramApiError(Exception):
    """A Telegram-style failure: answered as ``{"ok": false, "error_code", "description"}``."""

    def __init__(self, error_code: int, description: str, parameters: JSONDict | None = None):
        super().__init__(description)
        self.error_code = error_code
        self.description = description
        self.parameters = parameters

    def body(self) -> JSONDict:
        body: JSONDict = {"ok": False, "error_code": self.error_code, "description": self.description}
        if self.parameters:
            body["parameters"] = self.parameters
        return body


def _bad_request(what: str) -> TelegramApiError:
    return TelegramApiError(400, f"Bad Request: {what}")


@dataclass
class _Upload:
    """A file part of a multipart request (the bot uploading a document)."""

    filename: str | None
    content_type: str
    content: bytes


@dataclass
class _StoredFile:
    file_id: str
    file_unique_id: str
    file_path: str
    content: bytes


@dataclass
class _StoredMessage:
    """A message as Telegram returns it (``wire``) plus what only the test needs to see."""

    wire: JSONDict
    from_bot: bool
    parse_mode: str | None = None
    markup: JSONDict | None = None  # reply markup as the user currently sees it (any kind)
    deleted: bool = False

    def view(self) -> JSONDict:
        view = copy.deepcopy(self.wire)
        view.update(parse_mode=self.parse_mode, reply_markup=copy.deepcopy(self.markup), deleted=self.deleted)
        return view


class _UpdateIdBlocks:
    """Disjoint blocks of update ids, one per stand-in, across processes (random base) and instances."""

    def __init__(self) -> None:
        import random

        self._base = random.randrange(1, 2**30) * 1000
        self._count = itertools.count()

    def next(self) -> int:
        return self._base + next(self._count) * 1_000_000


_first_update_ids = _UpdateIdBlocks()


class TelegramStandin:
    """Serves the Telegram Bot API on 127.0.0.1 from a background thread; see the module doc.

    Every public method is thread-safe: state lives behind one lock, which the server thread
    and the test thread(s) share, and waiters are woken on every change.
    """

    def __init__(
        self,
        *,
        bot_id: int = 7_000_000_001,
        bot_username: str = "grove_test_bot",
        bot_first_name: str = "Grove",
        max_download_size: int = MAX_DOWNLOAD_SIZE,
        validate_markup: bool = True,
        first_update_id: int | None = None,
    ) -> None:
        self.bot_user: JSONDict = {
            "id": bot_id, "is_bot": True, "first_name": bot_first_name, "username": bot_username,
        }
        self.max_download_size = max_download_size
        self.validate_markup = validate_markup
        # An older Bot API server (before 9.3) has no sendMessageDraft: set True to be one.
        self.refuse_drafts = False
        self._allowed_updates: list[str] | None = None  # getUpdates' allowed_updates (None: the default set)
        # Like a local Bot API server started with --local: getFile answers with an absolute path
        # to the file on its disk and has no download limit (set a folder to switch it on).
        self.local_dir: Path | None = None
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._async_waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._tokens: list[str] = []
        self._users: dict[int, JSONDict] = {}
        self._groups: dict[int, JSONDict] = {}  # chat id (negative) → its chat object
        self._pending: list[JSONDict] = []
        # Telegram's update ids are unique for a bot for good (they start anywhere, then count up);
        # every stand-in plays the same bot against one database, so each starts somewhere new.
        self._next_update_id = first_update_id if first_update_id is not None else \
            _first_update_ids.next()
        self._poll_generation = 0
        self._last_message_id: dict[int, int] = {}
        self._messages: dict[tuple[int, int], _StoredMessage] = {}
        self._bot_message_keys: list[tuple[int, int]] = []
        self._files: dict[str, _StoredFile] = {}
        self._file_seq = itertools.count(1)
        self._callback_seq = itertools.count(4_000_000_000_000_000_001)
        self._open_callbacks: set[str] = set()
        self._callback_answers: list[JSONDict] = []
        self._chat_actions: list[tuple[int, str]] = []
        self._calls: list[JSONDict] = []
        self._failures: dict[str, list[TelegramApiError]] = {}
        self._commands: dict[str, list[JSONDict]] = {}
        self._webhook_url = ""
        self._closing = False
        self._port: int | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._handlers: dict[str, Callable[[JSONDict, dict[str, _Upload]], Any]] = {
            "getMe": self._get_me,
            "logOut": lambda p, u: True,
            "close": lambda p, u: True,
            "deleteWebhook": self._delete_webhook,
            "setWebhook": self._set_webhook,
            "getWebhookInfo": self._get_webhook_info,
            "setMyCommands": self._set_my_commands,
            "getMyCommands": self._get_my_commands,
            "deleteMyCommands": self._delete_my_commands,
            "sendMessage": self._send_message,
            "sendMessageDraft": self._send_message_draft,
            "editMessageText": self._edit_message_text,
            "editMessageReplyMarkup": self._edit_message_reply_markup,
            "deleteMessage": self._delete_message,
            "answerCallbackQuery": self._answer_callback_query,
            "sendChatAction": self._send_chat_action,
            "sendDocument": self._send_document,
            "getFile": self._get_file,
        }
        self._canonical = {name.lower(): name for name in [*self._handlers, "getUpdates"]}
        self.asgi_app = Starlette(
            routes=[
                Route("/bot{token}/{method}", self._api_endpoint, methods=["GET", "POST"]),
                Route("/file/bot{token}/{file_path:path}", self._file_endpoint, methods=["GET"]),
                Route("/{rest:path}", self._not_found, methods=["GET", "POST"]),
            ]
        )

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> TelegramStandin:
        """Bind a free port and serve from a daemon thread; returns once requests are accepted."""
        if self._thread is not None:
            raise RuntimeError("TelegramStandin already started")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))  # binding here (not in uvicorn) makes the free port race-free
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.asgi_app, log_config=None, log_level="warning", access_log=False, lifespan="off",
            loop="asyncio", http="h11", timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="telegram-standin", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("TelegramStandin server failed to start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Release pending long polls at once, then shut the server down."""
        with self._lock:
            self._closing = True
            self._notify()
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)

    def __enter__(self) -> TelegramStandin:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def api_url(self) -> str:
        """``http://127.0.0.1:PORT``; the bot's base_url is this + "/bot", base_file_url + "/file/bot"."""
        if self._port is None:
            raise RuntimeError("TelegramStandin not started")
        return f"http://127.0.0.1:{self._port}"

    @property
    def tokens(self) -> list[str]:
        """Every distinct bot token seen in a request, in order of first use."""
        with self._lock:
            return list(self._tokens)

    # ------------------------------------------------------------------ test side: acting as users

    def send_text(
        self, user_id: int, text: str, *, first_name: str | None = None, username: str | None = None
    ) -> JSONDict:
        """The user writes ``text`` to the bot; ``/commands`` get ``bot_command`` entities like Telegram's."""
        body: JSONDict = {"text": text}
        entities = [
            {"type": "bot_command", "offset": _utf16_len(text[: m.start()]), "length": _utf16_len(m.group())}
            for m in _COMMAND_RE.finditer(text)
        ]
        if entities:
            body["entities"] = entities
        return self._user_message(user_id, body, first_name=first_name, username=username)

    def edit_text(self, user_id: int, message_id: int, text: str) -> JSONDict:
        """The user edits their earlier message: Telegram sends an ``edited_message`` update with
        the same ``message_id``, the new text and an ``edit_date``."""
        with self._lock:
            stored = self._messages.get((user_id, message_id))
            if stored is None or stored.from_bot:
                raise LookupError(f"no message {message_id} of user {user_id} to edit")
            stored.wire["text"] = text
            stored.wire["edit_date"] = int(time.time())
            return self._enqueue({"edited_message": copy.deepcopy(stored.wire)})

    def send_group_text(
        self, chat_id: int, user_id: int, text: str, *, reply_to: int | None = None, title: str = "Садоводы"
    ) -> JSONDict:
        """A user writes in a supergroup the bot is in (``chat_id`` negative, as Telegram's are).

        Commands and ``@username`` mentions get their entities; ``reply_to`` makes it a reply to
        that message of the group (the bot's, say), with the ``reply_to_message`` Telegram adds.
        """
        if chat_id >= 0:
            raise ValueError("group chat ids are negative")
        body: JSONDict = {"text": text}
        entities = [
            {"type": "bot_command", "offset": _utf16_len(text[: m.start()]), "length": _utf16_len(m.group())}
            for m in _COMMAND_RE.finditer(text)
        ] + [
            {"type": "mention", "offset": _utf16_len(text[: m.start()]), "length": _utf16_len(m.group())}
            for m in re.finditer(r"(?<![\w@])@[A-Za-z0-9_]{5,32}", text)
        ]
        if entities:
            body["entities"] = sorted(entities, key=lambda e: e["offset"])
        with self._lock:
            self._groups.setdefault(chat_id, {"id": chat_id, "type": "supergroup", "title": title})
            if reply_to is not None:
                target = self._messages[(chat_id, reply_to)]
                body["reply_to_message"] = {k: v for k, v in target.wire.items() if k != "reply_to_message"}
            sender = self._user(user_id)
            stored = self._add_message(chat_id, sender, body, from_bot=False)
            return self._enqueue({"message": copy.deepcopy(stored.wire)})

    def send_document(
        self, user_id: int, content: bytes, file_name: str, mime_type: str, caption: str | None = None
    ) -> JSONDict:
        """The user sends a file; getFile + download on its ``file_id`` returns ``content``."""
        stored = self._store_file(content, "documents", file_name=file_name, mime_type=mime_type)
        document = {**self._file_fields(stored), "file_name": file_name, "mime_type": mime_type}
        return self._user_message(user_id, _with_caption({"document": document}, caption))

    def send_voice(
        self, user_id: int, content: bytes, duration: int, *, mime_type: str = "audio/ogg",
        caption: str | None = None,
    ) -> JSONDict:
        """The user records a voice note (Telegram's are OGG/Opus, hence ``audio/ogg``)."""
        stored = self._store_file(content, "voice", mime_type=mime_type)
        voice = {**self._file_fields(stored), "duration": duration, "mime_type": mime_type}
        return self._user_message(user_id, _with_caption({"voice": voice}, caption))

    def send_audio(
        self, user_id: int, content: bytes, duration: int, *, file_name: str = "audio.mp3",
        mime_type: str = "audio/mpeg", title: str | None = None, performer: str | None = None,
        caption: str | None = None,
    ) -> JSONDict:
        """The user sends a music file (an ``Audio``, not a voice note)."""
        stored = self._store_file(content, "music", file_name=file_name, mime_type=mime_type)
        audio: JSONDict = {
            **self._file_fields(stored), "duration": duration, "file_name": file_name, "mime_type": mime_type,
        }
        audio.update({k: v for k, v in (("title", title), ("performer", performer)) if v is not None})
        return self._user_message(user_id, _with_caption({"audio": audio}, caption))

    def send_video(
        self, user_id: int, content: bytes, duration: int, *, width: int = 640, height: int = 360,
        file_name: str = "video.mp4", mime_type: str = "video/mp4", caption: str | None = None,
    ) -> JSONDict:
        """The user sends a video file."""
        stored = self._store_file(content, "videos", file_name=file_name, mime_type=mime_type)
        video = {
            **self._file_fields(stored), "width": width, "height": height, "duration": duration,
            "file_name": file_name, "mime_type": mime_type,
        }
        return self._user_message(user_id, _with_caption({"video": video}, caption))

    def send_video_note(self, user_id: int, content: bytes, duration: int, *, length: int = 384) -> JSONDict:
        """The user records a round video message (no file name or MIME type, like Telegram's)."""
        stored = self._store_file(content, "video_notes", file_name="note.mp4")
        video_note = {**self._file_fields(stored), "length": length, "duration": duration}
        return self._user_message(user_id, {"video_note": video_note})

    def send_photo(
        self, user_id: int, content: bytes, *, width: int = 1280, height: int = 960, caption: str | None = None
    ) -> JSONDict:
        """The user sends a picture: ``photo`` is a list of PhotoSize (here one size, the original)."""
        stored = self._store_file(content, "photos", file_name="photo.jpg")
        photo = [{**self._file_fields(stored), "width": width, "height": height}]
        return self._user_message(user_id, _with_caption({"photo": photo}, caption))

    def press_button(
        self, user_id: int, callback_data: str, *, message_id: int | None = None, strict: bool = True
    ) -> JSONDict:
        """The user presses an inline button on a bot message (default: the bot's last one in the chat).

        With ``strict`` the button must be on that message, as it must for a real user.
        """
        with self._lock:
            chat_id = user_id
            if message_id is None:
                keys = [k for k in self._bot_message_keys if k[0] == chat_id and not self._messages[k].deleted]
                if not keys:
                    raise LookupError(f"the bot has no message in chat {chat_id} to press a button on")
                message_id = keys[-1][1]
            stored = self._messages.get((chat_id, message_id))
            if stored is None or stored.deleted or not stored.from_bot:
                raise LookupError(f"no bot message {message_id} in chat {chat_id}")
            keyboard = (stored.wire.get("reply_markup") or {}).get("inline_keyboard", [])
            offered = [b.get("callback_data") for row in keyboard for b in row if "callback_data" in b]
            if strict and callback_data not in offered:
                raise ValueError(
                    f"message {message_id} in chat {chat_id} has no button with callback_data "
                    f"{callback_data!r}; it offers {offered!r}"
                )
            query_id = str(next(self._callback_seq))
            self._open_callbacks.add(query_id)
            query = {
                "id": query_id, "from": self._user(user_id), "message": copy.deepcopy(stored.wire),
                "chat_instance": str(-(abs(chat_id) * 7919 + 1_000_003)), "data": callback_data,
            }
            return self._enqueue({"callback_query": query})

    def stop_draft(self, user_id: int) -> JSONDict | None:
        """The user taps Telegram's own stop on the draft streaming in their chat (Bot API 10.3):
        only a draft sent with ``can_stop`` has the button. The `stopped_message_generation`
        update is queued only when the bot asked for it in ``allowed_updates`` (it is not in the
        default set of older clients); else None, as the press reaches no one."""
        with self._lock:
            drafts = [c for c in self._calls if c["method"].lower() == "sendmessagedraft" and c["response"].get("ok")
                      and int(c["params"]["chat_id"]) == user_id]
            if not drafts:
                raise LookupError(f"no draft streams in chat {user_id}")
            last = drafts[-1]["params"]
            if str(last.get("can_stop")).lower() not in ("true", "1"):
                raise ValueError(f"the draft in chat {user_id} has no stop button (sent without can_stop)")
            if self._allowed_updates is None or "stopped_message_generation" not in self._allowed_updates:
                return None
            return self._enqueue({"stopped_message_generation": {
                "chat": self._chat(user_id), "draft_id": int(last["draft_id"])}})

    def send_raw_update(self, update: JSONDict) -> JSONDict:
        """Queue any update JSON as given (even malformed), adding an ``update_id`` if it has none.

        The ``update_id`` itself must be an int: getUpdates' offset protocol rests on it. Note
        that an update PTB cannot even parse (say ``"message": "x"``) makes ``Bot.get_updates``
        raise for the whole batch, so PTB never confirms it and re-fetches it forever - that is
        PTB's behaviour, faithfully reproduced, not a stand-in bug.
        """
        json.dumps(update)  # fail here, in the test, rather than later in the server thread
        if not isinstance(update.get("update_id", 0), int) or isinstance(update.get("update_id"), bool):
            raise TypeError("update_id must be an int")
        with self._lock:
            return self._enqueue(copy.deepcopy(update))

    def fail_next(
        self, method: str, *, error_code: int = 400, description: str | None = None,
        retry_after: int | None = None, times: int = 1,
    ) -> None:
        """Make the next ``times`` calls of ``method`` fail like Telegram (e.g. 429 with retry_after)."""
        if description is None:
            description = (
                f"Too Many Requests: retry after {retry_after}" if retry_after is not None
                else "Bad Request: injected failure"
            )
        params = {"retry_after": retry_after} if retry_after is not None else None
        with self._lock:
            name = self._canonical.get(method.lower(), method)
            self._failures.setdefault(name, []).extend(
                TelegramApiError(error_code, description, params) for _ in range(times)
            )

    # ------------------------------------------------------------------ test side: inspecting the bot

    def bot_messages(self, chat_id: int | None = None) -> list[JSONDict]:
        """Every message the bot sent (in order, current state after edits), for one chat or all.

        Each is the wire Message plus test-only keys: ``parse_mode``, ``reply_markup`` (whatever
        keyboard the bot attached, not only inline ones) and ``deleted``.
        """
        with self._lock:
            return self._bot_views(chat_id)

    def sent_text(self, chat_id: int, message_id: int) -> str | None:
        """The text a bot message was sent with, before any edit (None: no such message was sent).

        `bot_messages` shows a message as it is now; a test that checks what was said first (an
        acknowledgement a job later edits into its result) must not depend on looking in time.
        """
        with self._lock:
            for call in self._calls:
                result = call["response"].get("result")
                if (call["method"].lower() == "sendmessage" and call["response"].get("ok")
                        and result["message_id"] == message_id and result["chat"]["id"] == chat_id):
                    return str(call["params"]["text"])
        return None

    def wait_for_bot_messages(self, chat_id: int, count: int, timeout: float = 10.0) -> list[JSONDict]:
        """Block until the bot has sent at least ``count`` messages to ``chat_id``; returns them all.

        Must not be called on the thread whose event loop runs the bot - it would freeze the bot -
        so that raises at once; use :meth:`wait_for_bot_messages_async` there.
        """
        _refuse_inside_event_loop("wait_for_bot_messages")
        found = self._wait_sync(self._bot_messages_ready(chat_id, count), timeout)
        return found if found is not None else self._raise_missing_messages(chat_id, count, timeout)

    async def wait_for_bot_messages_async(
        self, chat_id: int, count: int, timeout: float = 10.0
    ) -> list[JSONDict]:
        """:meth:`wait_for_bot_messages` for async tests: waits without blocking the event loop."""
        found = await self._wait_async(self._bot_messages_ready(chat_id, count), timeout)
        return found if found is not None else self._raise_missing_messages(chat_id, count, timeout)

    def wait_for_calls(self, method: str, count: int = 1, timeout: float = 10.0) -> list[JSONDict]:
        """Block until ``method`` was called at least ``count`` times; returns those calls."""
        _refuse_inside_event_loop("wait_for_calls")
        found = self._wait_sync(self._calls_ready(method, count), timeout)
        return found if found is not None else self._raise_missing_calls(method, count, timeout)

    async def wait_for_calls_async(self, method: str, count: int = 1, timeout: float = 10.0) -> list[JSONDict]:
        """:meth:`wait_for_calls` for async tests."""
        found = await self._wait_async(self._calls_ready(method, count), timeout)
        return found if found is not None else self._raise_missing_calls(method, count, timeout)

    def calls(self, method: str | None = None) -> list[JSONDict]:
        """Every API request (``method``, ``token``, parsed ``params``, ``response``), oldest first.

        Uploaded files appear in ``params`` as ``{"upload": {file_name, mime_type, size}}``;
        downloads through the file route are logged with method ``"file"``.
        """
        with self._lock:
            wanted = method.lower() if method else None
            return [copy.deepcopy(c) for c in self._calls if wanted is None or c["method"].lower() == wanted]

    def callback_answers(self) -> list[JSONDict]:
        """Params of every successful answerCallbackQuery, in order."""
        with self._lock:
            return copy.deepcopy(self._callback_answers)

    def chat_actions(self, chat_id: int | None = None) -> list[str]:
        """The chat actions ("typing", "upload_document" ...) the bot sent, for one chat or all."""
        with self._lock:
            return [a for c, a in self._chat_actions if chat_id is None or c == chat_id]

    def pending_updates(self) -> list[JSONDict]:
        """Updates not yet confirmed by a getUpdates offset (delivered or not)."""
        with self._lock:
            return copy.deepcopy(self._pending)

    def file_content(self, file_id: str) -> bytes:
        """The bytes behind a file_id - a user's upload or one the bot sent."""
        with self._lock:
            return self._files[file_id].content

    def my_commands(self, chat_id: int | None = None) -> list[JSONDict]:
        """The command list last set with setMyCommands for the default scope (or one chat's) and language."""
        params = {} if chat_id is None else {"scope": {"type": "chat", "chat_id": chat_id}}
        with self._lock:
            return copy.deepcopy(self._commands.get(_commands_key(params), []))

    # ------------------------------------------------------------------ HTTP layer

    async def _api_endpoint(self, request: Request) -> Response:
        token, method = request.path_params["token"], request.path_params["method"]
        name = self._canonical.get(method.lower(), method)
        params: JSONDict = {}
        try:
            params, uploads = await _read_params(request)
            if name == "getUpdates":
                with self._lock:
                    self._check_failure(name)
                result: Any = await self._get_updates(params)
                return self._respond(token, name, params, {"ok": True, "result": result})
            with self._lock:
                self._check_failure(name)
                handler = self._handlers.get(name)
                if handler is None:
                    raise _unknown_method(method)
                result = handler(params, uploads)
                # Logged under the same lock as the state change, so a test woken by a new bot
                # message already sees the call that made it.
                return self._respond(token, name, params, {"ok": True, "result": result})
        except TelegramApiError as error:
            return self._respond(token, name, params, error.body(), status=error.error_code)
        except Exception as error:  # a stand-in bug: make it loud in the call log, not a bare 500
            failure = TelegramApiError(500, f"Internal Server Error: stand-in failed: {error!r}")
            return self._respond(token, name, params, failure.body(), status=500)

    def _respond(self, token: str, name: str, params: JSONDict, body: JSONDict, status: int = 200) -> Response:
        self._log_call(token, name, params, body)
        return JSONResponse(body, status_code=status)

    def _log_call(self, token: str, name: str, params: JSONDict, body: JSONDict) -> None:
        with self._lock:
            if token not in self._tokens:
                self._tokens.append(token)
            self._calls.append({
                "method": name, "token": token, "params": copy.deepcopy(params),
                "response": copy.deepcopy(body), "time": time.time(),
            })
            self._notify()

    async def _file_endpoint(self, request: Request) -> Response:
        token, file_path = request.path_params["token"], request.path_params["file_path"]
        with self._lock:
            stored = next((f for f in self._files.values() if f.file_path == file_path), None)
        if stored is None:
            return self._respond(token, "file", {"file_path": file_path}, _NOT_FOUND, status=404)
        self._log_call(token, "file", {"file_path": file_path}, {"ok": True, "size": len(stored.content)})
        return Response(stored.content, media_type="application/octet-stream")

    async def _not_found(self, request: Request) -> Response:
        return JSONResponse(_NOT_FOUND, status_code=404)

    # ------------------------------------------------------------------ Bot API methods

    def _get_me(self, params: JSONDict, uploads: dict[str, _Upload]) -> JSONDict:
        return {
            **self.bot_user, "can_join_groups": True, "can_read_all_group_messages": False,
            "supports_inline_queries": False, "can_connect_to_business": False, "has_main_web_app": False,
        }

    def _delete_webhook(self, params: JSONDict, uploads: dict[str, _Upload]) -> bool:
        self._webhook_url = ""
        if params.get("drop_pending_updates"):
            self._pending.clear()
        return True

    def _set_webhook(self, params: JSONDict, uploads: dict[str, _Upload]) -> bool:
        self._webhook_url = str(params.get("url") or "")
        if params.get("drop_pending_updates"):
            self._pending.clear()
        return True

    def _get_webhook_info(self, params: JSONDict, uploads: dict[str, _Upload]) -> JSONDict:
        return {"url": self._webhook_url, "has_custom_certificate": False, "pending_update_count": len(self._pending)}

    def _set_my_commands(self, params: JSONDict, uploads: dict[str, _Upload]) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise _bad_request("can't parse commands JSON object")
        for command in commands:
            if not isinstance(command, dict) or not _BOT_COMMAND_NAME_RE.fullmatch(str(command.get("command", ""))):
                raise _bad_request("BOT_COMMAND_INVALID")
            if not 1 <= len(str(command.get("description", ""))) <= 256:
                raise _bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
        self._commands[_commands_key(params)] = commands
        return True

    def _get_my_commands(self, params: JSONDict, uploads: dict[str, _Upload]) -> list[JSONDict]:
        return self._commands.get(_commands_key(params), [])

    def _delete_my_commands(self, params: JSONDict, uploads: dict[str, _Upload]) -> bool:
        self._commands.pop(_commands_key(params), None)
        return True

    async def _get_updates(self, params: JSONDict) -> list[JSONDict]:
        """Real long polling: confirm below ``offset``, then wait up to ``timeout`` s for updates.

        A newer getUpdates ends an older one with 409, as Telegram does - which also frees the
        server from polls whose client has gone away.
        """
        offset, limit, timeout = (params.get(k) for k in ("offset", "limit", "timeout"))
        if not all(v is None or isinstance(v, int | float) for v in (offset, limit, timeout)):
            raise _bad_request("wrong parameter in getUpdates request")
        limit = min(max(int(limit or 100), 1), 100)
        allowed = params.get("allowed_updates")
        if isinstance(allowed, str):
            allowed = json.loads(allowed)
        with self._lock:
            if allowed is not None:  # as Telegram: kept until a later call names others
                self._allowed_updates = list(allowed) or None
            if self._webhook_url:
                raise TelegramApiError(
                    409, "Conflict: can't use getUpdates method while webhook is active; "
                    "use deleteWebhook to delete the webhook first",
                )
            if offset:
                offset = int(offset)
                if offset > 0:
                    self._pending = [u for u in self._pending if u["update_id"] >= offset]
                else:
                    self._pending = self._pending[offset:]
            self._poll_generation += 1
            generation = self._poll_generation
            self._notify()

        def ready() -> list[JSONDict] | None:
            if self._closing:
                return []
            if self._poll_generation != generation:
                raise TelegramApiError(
                    409, "Conflict: terminated by other getUpdates request; "
                    "make sure that only one bot instance is running",
                )
            return copy.deepcopy(self._pending[:limit]) or None

        return await self._wait_async(ready, float(timeout or 0)) or []

    def _send_message(self, params: JSONDict, uploads: dict[str, _Upload]) -> JSONDict:
        chat_id = _chat_id(params)
        text = params.get("text")
        if not isinstance(text, str):
            raise _bad_request("message text is empty")
        parse_mode = params.get("parse_mode")
        self._check_text(text, parse_mode, MAX_TEXT_LENGTH, "message text")
        markup, wire_markup = _reply_markup(params)
        body: JSONDict = {"text": text, **self._reply_to(chat_id, params)}
        if wire_markup:
            body["reply_markup"] = wire_markup
        stored = self._add_message(chat_id, dict(self.bot_user), body, from_bot=True)
        stored.parse_mode, stored.markup = parse_mode, markup
        return stored.wire

    def _send_message_draft(self, params: JSONDict, uploads: dict[str, _Upload]) -> bool:
        """Bot API 9.3+: a partial message shown as an animated draft in a private chat (an empty
        text: the "Thinking…" placeholder); nothing is stored in the chat. See `drafts`."""
        if self.refuse_drafts:  # what a server answers for a method it does not know
            raise TelegramApiError(404, "Not Found: method not found")
        chat_id = _chat_id(params)
        if chat_id < 0:
            raise _bad_request("message drafts can be sent only to private chats")
        draft_id = _int_param(params, "draft_id")
        if draft_id == 0:
            raise _bad_request("draft_id must be non-zero")
        text = params.get("text")
        if text is not None and not isinstance(text, str):
            raise _bad_request("wrong text specified")
        if text:
            self._check_text(text, params.get("parse_mode"), MAX_TEXT_LENGTH, "message text")
        return True

    def drafts(self, chat_id: int) -> list[JSONDict]:
        """The drafts accepted for a chat, oldest first: ``draft_id``, ``text`` and ``time``."""
        return [{"draft_id": c["params"]["draft_id"], "text": c["params"].get("text") or "", "time": c["time"]}
                for c in self.calls("sendMessageDraft")
                if c["response"].get("ok") and int(c["params"]["chat_id"]) == chat_id]

    def _edit_message_text(self, params: JSONDict, uploads: dict[str, _Upload]) -> JSONDict:
        stored = self._editable(params, "message to edit not found")
        text = params.get("text")
        if not isinstance(text, str):
            raise _bad_request("message text is empty")
        parse_mode = params.get("parse_mode")
        self._check_text(text, parse_mode, MAX_TEXT_LENGTH, "message text")
        if "text" not in stored.wire:
            raise _bad_request("there is no text in the message to edit")
        # Like Telegram: an edit without reply_markup removes the inline keyboard.
        markup, wire_markup = _reply_markup(params)
        if text == stored.wire["text"] and wire_markup == stored.wire.get("reply_markup"):
            raise _bad_request(_NOT_MODIFIED)
        stored.wire["text"], stored.parse_mode = text, parse_mode
        return self._set_markup(stored, markup, wire_markup)

    def _edit_message_reply_markup(self, params: JSONDict, uploads: dict[str, _Upload]) -> JSONDict:
        stored = self._editable(params, "message to edit not found")
        markup, wire_markup = _reply_markup(params)
        if wire_markup == stored.wire.get("reply_markup"):
            raise _bad_request(_NOT_MODIFIED)
        return self._set_markup(stored, markup, wire_markup)

    def _delete_message(self, params: JSONDict, uploads: dict[str, _Upload]) -> bool:
        stored = self._messages.get((_chat_id(params), _int_param(params, "message_id")))
        if stored is None or stored.deleted:
            raise _bad_request("message to delete not found")
        stored.deleted = True
        return True

    def _answer_callback_query(self, params: JSONDict, uploads: dict[str, _Upload]) -> bool:
        query_id = str(params.get("callback_query_id", ""))
        if query_id not in self._open_callbacks:
            raise _bad_request("query is too old and response timeout expired or query ID is invalid")
        self._open_callbacks.discard(query_id)
        self._callback_answers.append(copy.deepcopy(params))
        return True

    def _send_chat_action(self, params: JSONDict, uploads: dict[str, _Upload]) -> bool:
        chat_id = _chat_id(params)
        action = params.get("action")
        if action not in CHAT_ACTIONS:
            raise _bad_request("wrong parameter action in request")
        self._chat_actions.append((chat_id, action))
        return True

    def _send_document(self, params: JSONDict, uploads: dict[str, _Upload]) -> JSONDict:
        chat_id = _chat_id(params)
        caption, parse_mode = params.get("caption"), params.get("parse_mode")
        if caption is not None:
            self._check_text(str(caption), parse_mode, MAX_CAPTION_LENGTH, "message caption")
        markup, wire_markup = _reply_markup(params)
        reply_to = self._reply_to(chat_id, params)
        upload = uploads.get("document")
        if upload is not None:
            file_name = upload.filename or "document"
            mime_type = upload.content_type
            if mime_type == "application/octet-stream":
                mime_type = mimetypes.guess_type(file_name)[0] or mime_type
            stored_file = self._store_file(upload.content, "documents", file_name=file_name, mime_type=mime_type)
            document = {**self._file_fields(stored_file), "file_name": file_name, "mime_type": mime_type}
        else:
            file_id = params.get("document")
            if not isinstance(file_id, str) or file_id not in self._files:
                raise _bad_request("wrong file identifier/HTTP URL specified")
            known = self._find_file_json(file_id) or {}
            document = {**self._file_fields(self._files[file_id]), **{
                k: known[k] for k in ("file_name", "mime_type") if k in known
            }}
        body = _with_caption({"document": document, **reply_to}, caption)
        if wire_markup:
            body["reply_markup"] = wire_markup
        stored = self._add_message(chat_id, dict(self.bot_user), body, from_bot=True)
        stored.parse_mode, stored.markup = parse_mode, markup
        return stored.wire

    def _get_file(self, params: JSONDict, uploads: dict[str, _Upload]) -> JSONDict:
        stored = self._files.get(str(params.get("file_id", "")))
        if stored is None:
            raise _bad_request("invalid file_id")
        if self.local_dir is not None:
            on_disk = self.local_dir / stored.file_path
            on_disk.parent.mkdir(parents=True, exist_ok=True)
            on_disk.write_bytes(stored.content)
            return {**self._file_fields(stored), "file_path": str(on_disk.resolve())}
        if len(stored.content) > self.max_download_size:
            raise _bad_request("file is too big")
        return {**self._file_fields(stored), "file_path": stored.file_path}

    # ------------------------------------------------------------------ internals (call with the lock held)

    def _notify(self) -> None:
        """Wake sync waiters and async waiters (on whichever loop they wait)."""
        self._cond.notify_all()
        for loop, event in list(self._async_waiters):
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that loop is closed; its waiter is gone
                self._async_waiters.discard((loop, event))

    def _wait_sync(self, ready: Callable[[], T | None], timeout: float) -> T | None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while (result := ready()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)
            return result

    async def _wait_async(self, ready: Callable[[], T | None], timeout: float) -> T | None:
        loop = asyncio.get_running_loop()
        waiter = (loop, asyncio.Event())
        deadline = loop.time() + timeout
        with self._lock:
            self._async_waiters.add(waiter)
        try:
            while True:
                waiter[1].clear()  # before checking, so a change after the check still wakes us
                with self._lock:
                    result = ready()
                if result is not None:
                    return result
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return None
                try:
                    await asyncio.wait_for(waiter[1].wait(), remaining)
                except TimeoutError:
                    pass
        finally:
            with self._lock:
                self._async_waiters.discard(waiter)

    def _check_failure(self, name: str) -> None:
        queued = self._failures.get(name)
        if queued:
            raise queued.pop(0)

    def _enqueue(self, update: JSONDict) -> JSONDict:
        if "update_id" not in update:
            update["update_id"] = self._next_update_id
        if isinstance(update["update_id"], int):
            self._next_update_id = max(self._next_update_id, update["update_id"] + 1)
        self._pending.append(update)
        self._notify()
        return copy.deepcopy(update)

    def _user(self, user_id: int, first_name: str | None = None, username: str | None = None) -> JSONDict:
        user = self._users.setdefault(
            user_id, {"id": user_id, "is_bot": False, "first_name": "Tester", "language_code": "en"}
        )
        if first_name is not None:
            user["first_name"] = first_name
        if username is not None:
            user["username"] = username
        return copy.deepcopy(user)

    def _chat(self, chat_id: int) -> JSONDict:
        if chat_id in self._groups:
            return copy.deepcopy(self._groups[chat_id])
        user = self._user(chat_id)
        chat = {"id": chat_id, "type": "private", "first_name": user["first_name"]}
        if "username" in user:
            chat["username"] = user["username"]
        return chat

    def _user_message(
        self, user_id: int, body: JSONDict, *, first_name: str | None = None, username: str | None = None
    ) -> JSONDict:
        with self._lock:
            sender = self._user(user_id, first_name, username)
            stored = self._add_message(user_id, sender, body, from_bot=False)
            return self._enqueue({"message": copy.deepcopy(stored.wire)})

    def _add_message(self, chat_id: int, sender: JSONDict, body: JSONDict, *, from_bot: bool) -> _StoredMessage:
        message_id = self._last_message_id.get(chat_id, 0) + 1
        self._last_message_id[chat_id] = message_id
        wire = {"message_id": message_id, "from": sender, "chat": self._chat(chat_id), "date": int(time.time()), **body}
        stored = _StoredMessage(wire=wire, from_bot=from_bot)
        self._messages[(chat_id, message_id)] = stored
        if from_bot:
            self._bot_message_keys.append((chat_id, message_id))
        self._notify()
        return stored

    def _reply_to(self, chat_id: int, params: JSONDict) -> JSONDict:
        reply = params.get("reply_parameters") or {}
        if not isinstance(reply, dict):
            raise _bad_request("can't parse reply parameters JSON object")
        message_id = reply.get("message_id", params.get("reply_to_message_id"))
        if message_id is None:
            return {}
        target = self._messages.get((chat_id, message_id)) if isinstance(message_id, int) else None
        if target is None or target.deleted:
            if reply.get("allow_sending_without_reply") or params.get("allow_sending_without_reply"):
                return {}
            raise _bad_request("message to be replied not found")
        return {"reply_to_message": {k: v for k, v in target.wire.items() if k != "reply_to_message"}}

    def _editable(self, params: JSONDict, missing: str) -> _StoredMessage:
        if params.get("inline_message_id") is not None:
            raise _bad_request("inline messages are not supported by the stand-in")
        stored = self._messages.get((_chat_id(params), _int_param(params, "message_id")))
        if stored is None or stored.deleted:
            raise _bad_request(missing)
        if not stored.from_bot:
            raise _bad_request("message can't be edited")
        return stored

    def _set_markup(self, stored: _StoredMessage, markup: JSONDict | None, wire_markup: JSONDict | None) -> JSONDict:
        stored.markup = markup
        stored.wire.pop("reply_markup", None)
        if wire_markup:
            stored.wire["reply_markup"] = wire_markup
        stored.wire["edit_date"] = int(time.time())
        self._notify()
        return stored.wire

    def _check_text(self, text: str, parse_mode: Any, limit: int, what: str) -> None:
        visible = text
        if self.validate_markup and parse_mode:
            error, visible = _parse_markup(text, str(parse_mode))
            if error:
                raise _bad_request(f"can't parse entities: {error}")
        if what == "message text" and not visible.strip():
            raise _bad_request(f"{what} is empty")
        if len(visible) > limit:
            raise _bad_request(f"{what} is too long")

    def _store_file(
        self, content: bytes, folder: str, *, file_name: str | None = None, mime_type: str | None = None
    ) -> _StoredFile:
        if not isinstance(content, bytes | bytearray):
            raise TypeError("content must be bytes")
        with self._lock:
            n = next(self._file_seq)
            suffix = (file_name and "." in file_name and "." + file_name.rsplit(".", 1)[1]) or (
                ".oga" if folder == "voice" else mimetypes.guess_extension(mime_type or "") or ""
            )
            stored = _StoredFile(
                file_id=f"BQACAgIAAx{n:06d}{folder.replace('_', '')}", file_unique_id=f"AgAD{n:06d}",
                file_path=f"{folder}/file_{n}{suffix}", content=bytes(content),
            )
            self._files[stored.file_id] = stored
            return stored

    @staticmethod
    def _file_fields(stored: _StoredFile) -> JSONDict:
        return {"file_id": stored.file_id, "file_unique_id": stored.file_unique_id, "file_size": len(stored.content)}

    def _find_file_json(self, file_id: str) -> JSONDict | None:
        for stored in self._messages.values():
            for kind in ("document", "audio", "video"):
                media = stored.wire.get(kind)
                if isinstance(media, dict) and media.get("file_id") == file_id:
                    return media
        return None

    def _bot_views(self, chat_id: int | None) -> list[JSONDict]:
        return [self._messages[k].view() for k in self._bot_message_keys if chat_id is None or k[0] == chat_id]

    def _bot_messages_ready(self, chat_id: int, count: int) -> Callable[[], list[JSONDict] | None]:
        def ready() -> list[JSONDict] | None:
            views = self._bot_views(chat_id)
            return views if len(views) >= count else None

        return ready

    def _calls_ready(self, method: str, count: int) -> Callable[[], list[JSONDict] | None]:
        def ready() -> list[JSONDict] | None:
            found = self.calls(method)
            return found if len(found) >= count else None

        return ready

    def _raise_missing_messages(self, chat_id: int, count: int, timeout: float) -> NoReturn:
        with self._lock:
            views = self._bot_views(chat_id)
            listing = "\n".join(
                f"  #{v['message_id']}: {_describe_message(v)}" for v in views
            ) or "  (none)"
            raise TimeoutError(
                f"expected {count} bot message(s) in chat {chat_id} within {timeout}s, got {len(views)}:\n"
                f"{listing}\n{self._diagnostics()}"
            )

    def _raise_missing_calls(self, method: str, count: int, timeout: float) -> NoReturn:
        with self._lock:
            raise TimeoutError(
                f"expected {count} {method} call(s) within {timeout}s, got {len(self.calls(method))}\n"
                f"{self._diagnostics()}"
            )

    def _diagnostics(self) -> str:
        """Recent API calls and undelivered updates: the usual answer to "why did the bot not reply"."""
        interesting = [
            c for c in self._calls if not (c["method"] == "getUpdates" and c["response"].get("result") == [])
        ][-15:]
        lines = [
            f"  {c['method']} {json.dumps(c['params'], ensure_ascii=False)[:160]} -> "
            + ("ok" if c["response"].get("ok") else f"{c['response'].get('error_code')} {c['response'].get('description')}")
            for c in interesting
        ]
        return (
            "last API calls (empty getUpdates omitted):\n" + ("\n".join(lines) or "  (none)")
            + f"\nunconfirmed updates: {len(self._pending)}; long polls so far: {self._poll_generation}"
        )


_NOT_FOUND: JSONDict = {"ok": False, "error_code": 404, "description": "Not Found"}
_NOT_MODIFIED = (
    "message is not modified: specified new message content and reply markup are exactly the same "
    "as a current content and reply markup of the message"
)


def _unknown_method(method: str) -> TelegramApiError:
    """Telegram's 404 - unless it is a real Bot API method this stand-in lacks.

    PTB turns any 404 from a regular method into ``InvalidToken``, which would send whoever
    meets it hunting for a token problem; a missing stand-in feature says so instead (PTB
    raises it as ``NetworkError``). PTB's Bot, which has a camelCase alias for every API
    method, serves as the list of real method names.
    """
    try:
        from telegram import Bot
    except ImportError:  # pragma: no cover - PTB is what this stand-in exists for
        Bot = None  # noqa: N806
    if Bot is not None and method[:1].islower() and callable(getattr(Bot, method, None)):
        return TelegramApiError(
            501, f"Not Implemented: the Telegram stand-in has no {method} yet; add it to {__name__}"
        )
    return TelegramApiError(404, "Not Found: method not found")


def _refuse_inside_event_loop(name: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"{name}() would block this thread's running event loop, and with it a bot polling there; "
        f"use `await standin.{name}_async(...)` instead"
    )


def _utf16_len(text: str) -> int:
    """Entity offsets and lengths count UTF-16 code units, not code points."""
    return len(text.encode("utf-16-le")) // 2


def _with_caption(body: JSONDict, caption: str | None) -> JSONDict:
    if caption is not None:
        body["caption"] = caption
    return body


def _describe_message(view: JSONDict) -> str:
    for kind in ("text", "caption"):
        if kind in view:
            return repr(view[kind]) + (" [deleted]" if view.get("deleted") else "")
    kinds = [k for k in ("document", "photo", "audio", "voice", "video") if k in view]
    return f"<{', '.join(kinds) or 'message'}>"


def _commands_key(params: JSONDict) -> str:
    scope = params.get("scope") or {"type": "default"}
    if isinstance(scope, str):  # a form-encoded request carries the object as JSON text
        scope = json.loads(scope)
    return json.dumps([scope, params.get("language_code") or ""], sort_keys=True)


def _chat_id(params: JSONDict) -> int:
    value = params.get("chat_id")
    if value is None or value == "":
        raise _bad_request("chat_id is empty")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise _bad_request("chat not found") from None


def _int_param(params: JSONDict, name: str) -> int:
    value = params.get(name)
    if not isinstance(value, int):
        raise _bad_request(f"{name} is empty" if value is None else f"wrong {name} specified")
    return value


def _reply_markup(params: JSONDict) -> tuple[JSONDict | None, JSONDict | None]:
    """Returns (markup as the bot sent it, markup as Telegram echoes it: inline keyboards only)."""
    markup = params.get("reply_markup")
    if markup is None:
        return None, None
    if isinstance(markup, str):
        try:
            markup = json.loads(markup)
        except ValueError:
            markup = None
    if not isinstance(markup, dict):
        raise _bad_request("can't parse reply keyboard markup JSON object")
    if "inline_keyboard" not in markup:
        return markup, None
    rows = markup["inline_keyboard"]
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise _bad_request("field \"inline_keyboard\" of the InlineKeyboardMarkup must be an Array of Arrays")
    for button in (b for row in rows for b in row):
        if not isinstance(button, dict) or not isinstance(button.get("text"), str):
            raise _bad_request("can't parse inline keyboard button: Field \"text\" must be of type String")
        if not any(k in button for k in _BUTTON_ACTIONS):
            raise _bad_request("can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard")
        data = button.get("callback_data")
        if data is not None and not 1 <= len(str(data).encode()) <= 64:
            raise _bad_request("BUTTON_DATA_INVALID")
    return markup, markup


# ---------------------------------------------------------------------- request decoding


async def _read_params(request: Request) -> tuple[JSONDict, dict[str, _Upload]]:
    """Parameters from the query string and a JSON, urlencoded or multipart body (as PTB sends)."""
    raw: dict[str, str] = dict(request.query_params)
    typed: JSONDict = {}
    uploads: dict[str, _Upload] = {}
    body = await request.body()
    content_type = request.headers.get("content-type", "")
    try:
        if not body:
            pass
        elif content_type.startswith("application/json"):
            decoded = json.loads(body)
            if not isinstance(decoded, dict):
                raise ValueError("the JSON body must be an object")
            typed.update(decoded)
        elif content_type.startswith("application/x-www-form-urlencoded"):
            raw.update(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))
        elif content_type.startswith("multipart/form-data"):
            fields, uploads = _parse_multipart(body, content_type)
            raw.update(fields)
    except (ValueError, UnicodeDecodeError) as error:
        raise _bad_request(f"can't parse request: {error}") from None
    params = {key: _decode_form_value(key, value) for key, value in raw.items()}
    params.update(typed)
    for name, upload in uploads.items():
        params[name] = {"upload": {"file_name": upload.filename, "mime_type": upload.content_type,
                                   "size": len(upload.content)}}
    return params, uploads


def _decode_form_value(key: str, value: str) -> Any:
    if key in _STRING_PARAMS:
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


_DISPOSITION_PARAM = re.compile(r';\s*([\w*-]+)="((?:[^"\\]|\\.)*)"')


def _parse_multipart(body: bytes, content_type: str) -> tuple[dict[str, str], dict[str, _Upload]]:
    """A byte-exact multipart/form-data reader (Starlette's needs python-multipart, not installed)."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if not match:
        raise ValueError("multipart body without boundary")
    delimiter = b"\r\n--" + match.group(1).encode()
    fields: dict[str, str] = {}
    uploads: dict[str, _Upload] = {}
    for part in (b"\r\n" + body).split(delimiter)[1:]:
        if part.startswith(b"--"):
            break
        head, _, content = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        headers = {}
        for line in head.decode().split("\r\n"):
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        disposition = dict(_DISPOSITION_PARAM.findall(headers.get("content-disposition", "")))
        name = disposition.get("name")
        if name is None:
            continue
        if "filename" in disposition:
            # httpx escapes '"' and control characters as %XX and doubles backslashes (HTML5 rules).
            filename = re.sub(r"%([01][0-9A-F]|22)", lambda m: chr(int(m.group(1), 16)), disposition["filename"])
            filename = filename.replace("\\\\", "\\")
            uploads[name] = _Upload(filename, headers.get("content-type", "application/octet-stream"), content)
        else:
            fields[name] = content.decode()
    return fields, uploads


# ---------------------------------------------------------------------- parse_mode validation


def _parse_markup(text: str, parse_mode: str) -> tuple[str | None, str]:
    """(Telegram's "can't parse entities" reason or None, the visible text) for a parse_mode."""
    mode = parse_mode.lower()
    if mode == "html":
        return _check_html(text)
    if mode == "markdownv2":
        return _check_markdown(text, v2=True)
    if mode == "markdown":
        return _check_markdown(text, v2=False)
    raise _bad_request("unsupported parse_mode")


_HTML_TAGS = frozenset(
    "b strong i em u ins s strike del span tg-spoiler a tg-emoji code pre blockquote".split()
)


class _HtmlChecker(html.parser.HTMLParser):
    """Telegram's HTML subset: only its tags, properly nested and closed (so no <br>, no <p>)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.stack: list[str] = []
        self.error: str | None = None
        self.visible: list[str] = []

    def _offset(self) -> int:
        line, column = self.getpos()
        return len(self.text[: self.line_starts[line - 1] + column].encode())

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.error is None:
            if tag not in _HTML_TAGS or (tag == "span" and ("class", "tg-spoiler") not in attrs):
                self.error = f'Unsupported start tag "{tag}" at byte offset {self._offset()}'
            elif tag == "blockquote" and "blockquote" in self.stack:  # Telegram: blockquotes can't be nested
                self.error = f"Can't parse entities: blockquote can't be nested at byte offset {self._offset()}"
            elif tag == "blockquote" and any(name != "expandable" for name, _ in attrs):
                self.error = f'Unsupported attribute of tag "blockquote" at byte offset {self._offset()}'
            else:
                self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.error is not None:
            return
        if not self.stack:
            self.error = f'Unexpected end tag at byte offset {self._offset()}'
        elif self.stack[-1] != tag:
            self.error = (
                f'Unmatched end tag at byte offset {self._offset()}, expected "</{self.stack[-1]}>", found "</{tag}>"'
            )
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.visible.append(data)


def _check_html(text: str) -> tuple[str | None, str]:
    checker = _HtmlChecker(text)
    checker.feed(text)
    checker.close()
    if checker.error is None and checker.stack:
        checker.error = f'Can\'t find end tag corresponding to start tag "{checker.stack[-1]}"'
    return checker.error, "".join(checker.visible)


_ENTITY_NAMES = {"*": "Bold", "_": "Italic", "~": "Strikethrough", "||": "Spoiler"}


def _check_markdown(text: str, *, v2: bool) -> tuple[str | None, str]:
    """Catches what Telegram rejects most often: unescaped reserved characters (MarkdownV2) and
    unclosed entities - e.g. a file name ``my_notes.txt`` in legacy Markdown. Conservative: what
    it lets through, Telegram may still reject, but what it rejects, Telegram rejects too."""

    def offset(index: int) -> int:
        return len(text[:index].encode())

    visible: list[str] = []
    open_at: dict[str, list[int]] = {}
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and (v2 or text[i + 1] in "_*`["):
            visible.append(text[i + 1])
            i += 2
            continue
        if c == "`":
            fence = "```" if text.startswith("```", i) else "`"
            end = text.find(fence, i + len(fence))
            while v2 and end > 0 and text[end - 1] == "\\":
                end = text.find(fence, end + 1)
            if end < 0:
                name = "Pre" if fence == "```" else "Code"
                return (f"Can't find end of {name} entity at byte offset {offset(i)}" if v2 else
                        f"Can't find end of the entity starting at byte offset {offset(i)}"), ""
            visible.append(text[i + len(fence): end])
            i = end + len(fence)
            continue
        if c == "]" and i + 1 < n and text[i + 1] == "(":
            end = text.find(")", i + 2)
            while v2 and end > 0 and text[end - 1] == "\\":
                end = text.find(")", end + 1)
            if end < 0:
                return f"Can't find end of a URL at byte offset {offset(i)}", ""
            i = end + 1
            continue
        marker = "||" if v2 and text.startswith("||", i) else c
        if marker in ("*", "_", "~", "||") and (v2 or marker in "*_"):
            stack = open_at.setdefault(marker, [])
            if stack:
                stack.pop()
            else:
                stack.append(i)
            i += len(marker)
            continue
        if v2 and c in "[]":
            i += 1
            continue
        if v2 and c == ">" and (i == 0 or text[i - 1] == "\n"):
            i += 1
            continue
        if v2 and c == "!" and text.startswith("![", i):
            i += 1
            continue
        if v2 and c in "()>#+-={}.!|":
            return f"Character '{c}' is reserved and must be escaped with the preceding '\\'", ""
        if not v2 and c == "[":
            i += 1
            continue
        visible.append(c)
        i += 1
    unclosed = sorted((at[0], m) for m, at in open_at.items() if at)
    if unclosed:
        at, marker = unclosed[0]
        return (f"Can't find end of {_ENTITY_NAMES[marker]} entity at byte offset {offset(at)}" if v2 else
                f"Can't find end of the entity starting at byte offset {offset(at)}"), ""
    return None, "".join(visible)
