"""The main workflow: every Telegram (or console) update becomes one run of this flow.

It reads `user_state.current_mode` and branches, like the seed's n8n main
workflow: commands and button presses → mode switch; messages → the chat or
the documents branch. Every handler *returns* its replies and sends nothing: the
turn around it (`grove.app.dispatch.process`) hands them to the one sender
(`nodes.telegram.reply.send_reply`), into the outbox of the turn's one transaction,
delivered after commit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flows import texts
from flows.mode_switch import menu, mode_switch
from flows.moderation import is_moderation_update, moderation
from grove.store import jobs
from grove.core.messages import IncomingUpdate, Reply
from grove.core.observe import flow
from grove.core.runs import current_run, deadline
from grove.core.shutdown import Stopped
from grove.core.settings import get_settings
from nodes.store import confirmations
from nodes.store.chat_history import clean_chat
from nodes.ingestion.classify_input import classify_input
from nodes.store.consultation_state import clear_state
from nodes.answering.context_window import fit_question
from nodes.store.document_store import delete_user_documents
from grove.core.domain_profile import active_profile
from grove.core.ingest_types import IngestError, IngestItem
from nodes.telegram.stream import streaming
from nodes.telegram.reply import answer_callback, typing_indicator
from nodes.store.topics import close_user_topics
from nodes.store.user_state import UserState, read_user_state, start_new_session
from nodes.ingestion.voice_question import spoken, transcribe_question

MENU_COMMANDS = {"start", "menu", "reset", "mode"}


RUN_NAME_CHARS = 40
"""Characters of what the user said that a run's name carries, so ops tell turns apart in a list."""


def run_name(parameters: dict[str, Any]) -> str:
    """Name runs after what happened, who did it and a short cut of what they said, e.g.
    `cmd-start-user42` or `text-user42 · как обрезать малину осенью…`."""
    update = parameters.get("update")
    if isinstance(update, dict):
        update = IncomingUpdate.model_validate(update)
    if not isinstance(update, IncomingUpdate):
        return "update"
    name = f"{update.kind}-user{update.user_id}"
    said = update.text or update.callback_data or next(
        (a.file_name for a in update.attachments if a.file_name), None)
    if said and not update.command:
        said = " ".join(said.split())
        if len(said) > RUN_NAME_CHARS:  # cut at a word when one ends in the second half
            cut = said[:RUN_NAME_CHARS]
            said = (cut.rsplit(" ", 1)[0] if cut.rfind(" ") > RUN_NAME_CHARS // 2 else cut) + "…"
        name += " · " + said
    return name


def chat_branch(update: IncomingUpdate, state: UserState) -> list[Reply]:
    """Чат: each message is a question, answered by the chat flow — or, when the deployment
    carries a domain profile, by the consultation flow (seed 000)."""
    from flows.answering import answering_flow

    said = ""
    if not update.text:
        voice = spoken(update.attachments)
        if voice is None:
            return offer_indexing(update)
        try:
            with typing_indicator(update.origin, update.chat_id):
                heard = transcribe_question(voice)
        except IngestError as exc:
            if (run := current_run()) is not None:
                run.fail(f"voice question not transcribed: {exc.reason}")
            return [Reply(chat_id=update.chat_id, text=exc.user_message)]
        said = texts.voice_heard(heard)
        update = update.model_copy(update={"text": heard})
    # A question longer than the model's room is cut before anything sees it, so neither this
    # turn nor the history it is stored in can overflow the window.
    question = fit_question(update.text or "")
    with typing_indicator(update.origin, update.chat_id), deadline(get_settings().chat_deadline), \
            streaming(update.origin, update.chat_id, user_id=update.user_id) as draft:
        try:
            answer = answering_flow()(question.text, update.user_id, state.session_id)
        except Stopped:  # «Стоп» in a flow that keeps nothing of a stopped answer (consultation, plans)
            return [Reply(chat_id=update.chat_id, text=texts.ANSWER_STOPPED,
                          replaces_message_id=draft.message_id if draft else None)]
    if answer.failed and (run := current_run()) is not None:
        run.fail(answer.failure or "no answer: the user got an apology")
    text = answer.text
    if question.cut:
        text = texts.question_cut(question.kept_chars, question.original_chars) + "\n\n" + text
    if said:
        text = f"{said}\n\n{text}"
    return [Reply(chat_id=update.chat_id, text=text, buttons=getattr(answer, "buttons", []),
                  markdown=not answer.failed, replaces_message_id=draft.message_id if draft else None)]


def offer_indexing(update: IncomingUpdate) -> list[Reply]:
    """A file (not a spoken question) sent in Чат: offered for the base with a one-time button,
    rather than refused — the user plainly wants it somewhere."""
    items = classify_input(None, update.attachments)
    if not items:
        return [Reply(chat_id=update.chat_id, text=texts.CHAT_NEEDS_TEXT)]
    token = confirmations.issue("index_offer", update.user_id, update.chat_id,
                                {"items": [item.model_dump(mode="json") for item in items]})
    return [Reply(chat_id=update.chat_id, text=texts.index_offer([_label(i) for i in items]),
                  buttons=texts.index_offer_buttons(token))]


def index_offer(update: IncomingUpdate) -> list[Reply]:
    """The offer's button: «Добавить в базу» queues the indexing job as База would; the mode stays Чат."""
    _, answer, token = ((update.callback_data or "").split(":", 2) + ["", ""])[:3]
    verdict, payload = confirmations.spend(token, "index_offer", update.user_id, update.chat_id) if token \
        else ("unknown", None)
    answer_callback(update.origin, update.callback_id)
    if verdict != "ok" or payload is None:
        return [Reply(chat_id=update.chat_id, text=texts.INDEX_OFFER_STALE)]
    if answer != "yes":
        return [Reply(chat_id=update.chat_id, text=texts.INDEX_OFFER_DECLINED)]
    items = [IngestItem.model_validate(item) for item in payload["items"]]
    return queue_indexing(update, items)


def culture_button(update: IncomingUpdate) -> list[Reply]:
    """A crop chosen with a button under «не могу определить культуру»: answered as if typed."""
    answer_callback(update.origin, update.callback_id)
    state = read_user_state(update.user_id)
    if state is None or state.current_mode != "chat" or active_profile() is None:
        return [menu(update.chat_id, texts.NO_MODE_YET)]
    crop = (update.callback_data or "").split(":", 1)[1]
    return chat_branch(update.model_copy(update={"text": crop, "callback_data": None}), state)


def documents_branch(update: IncomingUpdate, state: UserState) -> list[Reply]:
    """База: classify the message into items and queue their indexing as a background job.

    The user is answered at once («Принял …»); a worker edits that message with progress
    and finally with what was indexed, while the user's next messages are answered as usual.
    The local console has no second channel for later messages, so it indexes right away.
    """
    items = classify_input(update.text, update.attachments)
    if not items:
        return [Reply(chat_id=update.chat_id, text=texts.NOTHING_TO_INDEX)]
    return queue_indexing(update, items)


def edited_message(update: IncomingUpdate) -> list[Reply]:
    """A message the user changed. In База its new version replaces what the old one indexed
    (both staying searchable would answer from a text the user corrected); in Чат the question
    was answered already, and a second answer to the same message would read as a duplicate;
    an edited command is not run again."""
    state = read_user_state(update.user_id)
    if state is None or state.current_mode != "documents" or update.message_id is None or update.command:
        return []
    items = classify_input(update.text, update.attachments)
    if not items:
        return []
    return queue_indexing(update, items, replaces=update.message_id)


def queue_indexing(update: IncomingUpdate, items: list[IngestItem], *, replaces: int | None = None) -> list[Reply]:
    """Index `items` as a background job, acknowledged at once (the console indexes right away).

    The job remembers the message it came from, so that an edit of that message (`replaces`)
    can remove what this job indexed before indexing the new version."""
    if update.origin == "console":
        return index_now(update, items)
    waiting = jobs.open_jobs(update.user_id)
    job_id = jobs.enqueue("ingest", update.user_id, update.chat_id,
                          {"items": [item.model_dump(mode="json") for item in items],
                           "message_id": update.message_id, "replaces": replaces},
                          update_id=update.update_id)
    return [Reply(chat_id=update.chat_id, text=texts.ingest_accepted([_label(i) for i in items], waiting),
                  acknowledges_job=job_id)]


def index_now(update: IncomingUpdate, items: list[IngestItem]) -> list[Reply]:
    from flows.ingest import confirmation, ingest

    outcomes = ingest(items, update.user_id)
    return [Reply(chat_id=update.chat_id, text=confirmation(outcomes))]


def _label(item: IngestItem) -> str:
    if item.kind == "link" and item.url:
        return item.url
    if item.kind == "text":
        return "текст сообщения"
    return item.file_name or item.source_identifier


def clean_base(update: IncomingUpdate) -> list[Reply]:
    """Ask first, with a one-time button: deleting a whole base by a stray or forged tap would be a loss."""
    data = update.callback_data or ""
    if not data:
        token = confirmations.issue("clean_base", update.user_id, update.chat_id)
        return [Reply(chat_id=update.chat_id, text=texts.CLEAN_BASE_CONFIRM,
                      buttons=texts.clean_base_buttons(token))]
    _, answer, token = (data.split(":", 2) + ["", ""])[:3]
    verdict = confirmations.use(token, "clean_base", update.user_id, update.chat_id) if token else "unknown"
    if verdict != "ok":
        answer_callback(update.origin, update.callback_id, texts.CLEAN_BASE_STALE_TOAST)
        return [Reply(chat_id=update.chat_id, text=texts.CLEAN_BASE_STALE)]
    answer_callback(update.origin, update.callback_id)
    if answer == "yes":
        documents, _chunks = delete_user_documents(update.user_id)
        return [Reply(chat_id=update.chat_id, text=texts.BASE_CLEANED.format(n=documents))]
    return [Reply(chat_id=update.chat_id, text=texts.BASE_KEPT)]


def clean_chat_history(update: IncomingUpdate) -> list[Reply]:
    answer_callback(update.origin, update.callback_id)
    clean_chat(update.user_id)
    clear_state(update.user_id)
    close_user_topics(update.user_id)
    start_new_session(update.user_id, update.chat_id)
    return [Reply(chat_id=update.chat_id, text=texts.CHAT_CLEANED)]


def group_message(update: IncomingUpdate) -> list[Reply]:
    """A group or supergroup: personal bases and histories are private, so nothing here reads
    or writes them. Addressed (a mention, a reply to the bot, a command for it), the bot says
    how to continue in private; anything else in the group is not for it and gets no reply."""
    if update.callback_data is not None:
        answer_callback(update.origin, update.callback_id)
        return []
    if not update.addressed or update.edited:  # an edit was answered (or ignored) as first written
        return []
    return [Reply(chat_id=update.chat_id, text=texts.GROUP_GO_PRIVATE)]


def show_help(update: IncomingUpdate) -> list[Reply]:
    return [Reply(chat_id=update.chat_id, text=texts.HELP)]


def by_mode(update: IncomingUpdate) -> list[Reply]:
    """A message that is not a command or a button: the user's mode decides what it is."""
    state = read_user_state(update.user_id)
    if state is None or state.current_mode is None:
        return [menu(update.chat_id, texts.NO_MODE_YET)]
    if not (update.text or update.attachments or update.command):
        return [Reply(chat_id=update.chat_id, text=texts.EMPTY_MESSAGE)]
    return MODE_BRANCHES[state.current_mode](update, state)


# --- routing, as data ------------------------------------------------------------------

Matcher = Callable[[IncomingUpdate], bool]
Handler = Callable[[IncomingUpdate], list[Reply]]


def command(*names: str) -> Matcher:
    return lambda update: update.command in names


def button(prefix: str, *, exact: bool = False) -> Matcher:
    """A press on a button whose data is `prefix` (`exact`) or starts with it."""
    def matches(update: IncomingUpdate) -> bool:
        data = update.callback_data
        return data is not None and (data == prefix if exact else data.startswith(prefix))
    return matches


def either(*matchers: Matcher) -> Matcher:
    return lambda update: any(m(update) for m in matchers)


@dataclass(frozen=True)
class Route:
    """An update `matches` → `handle` answers it. The first matching route of `ROUTES` wins."""

    name: str
    matches: Matcher
    handle: Handler


# In order: a group's first (never a personal base there), an edit before what it edits,
# then commands and buttons, and last the user's mode. A button nothing else claims goes
# to the mode switch, which says it is stale and shows the menu.
ROUTES: tuple[Route, ...] = (
    Route("group", lambda update: update.in_group, group_message),
    Route("edited", lambda update: update.edited, edited_message),
    Route("clean-base", either(command("clean_base"), button("clean_base")), clean_base),
    Route("moderation", is_moderation_update, moderation),
    Route("clean-chat", either(command("clean_chat"), button("clean_chat", exact=True)), clean_chat_history),
    Route("help", command("help"), show_help),
    Route("culture", button("culture:"), culture_button),
    Route("index-offer", button("index_offer:"), index_offer),
    Route("mode-switch", either(command(*MENU_COMMANDS), lambda update: update.callback_data is not None),
          mode_switch),
    Route("message", lambda update: True, by_mode),
)

# What a message is in each mode (`user_state.current_mode`).
MODE_BRANCHES: dict[str, Callable[[IncomingUpdate, UserState], list[Reply]]] = {
    "chat": chat_branch,
    "documents": documents_branch,
}


def route(update: IncomingUpdate) -> Route:
    return next(r for r in ROUTES if r.matches(update))


@flow(name="handle-update", flow_run_name=run_name)
def handle_update(update: IncomingUpdate) -> list[Reply]:
    """Route one update (`ROUTES`); returns the replies, which the turn sends."""
    return route(update).handle(update)
