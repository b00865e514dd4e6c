"""A message that is no command or button: the user's mode (`user_state.current_mode`) says what it is —
a question in Чат, something to index in База.

Чат: each message is answered by the chat flow, or by the consultation flow when the deployment carries
a domain profile (seed 000); a spoken question is transcribed first. База: the message is classified
into items whose indexing is queued as a background job, acknowledged at once; a worker edits that
message with progress and finally with what was indexed.
"""

from __future__ import annotations

from collections.abc import Callable

from flows import texts
from flows.mode_switch import menu
from flows.moderation import editing_answer, moderation
from grove.core.ingest_types import IngestError, IngestItem
from grove.core.messages import IncomingUpdate, Reply
from grove.core.runs import current_run, deadline
from grove.core.settings import get_settings
from grove.core.shutdown import Stopped
from grove.store import jobs
from nodes.answering.context_window import fit_question
from nodes.ingestion.classify_input import classify_input
from nodes.ingestion.voice_question import spoken, transcribe_question
from nodes.store import confirmations
from nodes.store.user_state import UserState, read_user_state
from nodes.telegram.reply import Sender
from nodes.telegram.stream import streaming


def by_mode(update: IncomingUpdate, sender: Sender) -> list[Reply]:
    """A message that is not a command or a button: the user's mode decides what it is."""
    if editing_answer(update):  # an admin's corrected answer to a queued one
        return moderation(update, sender)
    state = read_user_state(update.user_id)
    if state is None or state.current_mode is None:
        return [menu(update.chat_id, texts.NO_MODE_YET)]
    if not (update.text or update.attachments or update.command):
        return [Reply(chat_id=update.chat_id, text=texts.EMPTY_MESSAGE)]
    return MODE_BRANCHES[state.current_mode](update, state, sender)


def chat_branch(update: IncomingUpdate, state: UserState, sender: Sender) -> list[Reply]:
    """Чат: each message is a question, answered by the chat flow — or, when the deployment
    carries a domain profile, by the consultation flow (seed 000)."""
    from flows.answering import answering_flow

    settings = get_settings()  # read once for the turn, handed to each step of it
    said = ""
    if not update.text:
        voice = spoken(update.attachments)
        if voice is None:
            return offer_indexing(update)
        try:
            with sender.typing(update.origin, update.chat_id):
                heard = transcribe_question(voice, sender.api, settings)
        except IngestError as exc:
            if (run := current_run()) is not None:
                run.fail(f"voice question not transcribed: {exc.reason}")
            return [Reply(chat_id=update.chat_id, text=exc.user_message)]
        said = texts.voice_heard(heard)
        update = update.model_copy(update={"text": heard})
    # A question longer than the model's room is cut before anything sees it, so neither this
    # turn nor the history it is stored in can overflow the window. The local model's speed may move
    # the deadline, up to the call cap from now.
    question = fit_question(update.text or "", settings)
    with sender.typing(update.origin, update.chat_id), \
            deadline(settings.chat_deadline, at_most=settings.local_call_cap), \
            streaming(update.origin, update.chat_id, sender.drafts(), settings, update.user_id) as draft:
        try:
            answer = answering_flow()(question.text, update.user_id, state.session_id,
                                      show=draft.show if draft else None, settings=settings)
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
    return [Reply(chat_id=update.chat_id, text=texts.index_offer([i.label for i in items]),
                  buttons=texts.index_offer_buttons(token))]


def documents_branch(update: IncomingUpdate, state: UserState, sender: Sender) -> list[Reply]:
    """База: classify the message into items and queue their indexing as a background job.

    The user is answered at once («Принял …»); a worker edits that message with progress
    and finally with what was indexed, while the user's next messages are answered as usual.
    The local console has no second channel for later messages, so it indexes right away.
    """
    items = classify_input(update.text, update.attachments)
    if not items:
        return [Reply(chat_id=update.chat_id, text=texts.NOTHING_TO_INDEX)]
    return queue_indexing(update, items)


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
    return [Reply(chat_id=update.chat_id, text=texts.ingest_accepted([i.label for i in items], waiting),
                  acknowledges_job=job_id)]


def index_now(update: IncomingUpdate, items: list[IngestItem]) -> list[Reply]:
    from flows.ingest import confirmation, ingest

    outcomes = ingest(items, update.user_id)
    return [Reply(chat_id=update.chat_id, text=confirmation(outcomes))]


# What a message is in each mode (`user_state.current_mode`).
MODE_BRANCHES: dict[str, Callable[[IncomingUpdate, UserState, Sender], list[Reply]]] = {
    "chat": chat_branch,
    "documents": documents_branch,
}
