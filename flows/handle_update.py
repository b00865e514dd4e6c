"""The main workflow: every Telegram (or console) update becomes one run of this flow.

It reads `user_state.current_mode` and branches, like the seed's n8n main
workflow: commands and button presses → mode switch; messages → the chat or
the documents branch.
"""

from __future__ import annotations

from prefect import flow, runtime

from flows import texts
from flows.mode_switch import menu, mode_switch
from flows.moderation import is_moderation_update, moderation
from grove.db import StoreUnavailable
from grove.messages import IncomingUpdate, Reply
from nodes.chat_history import clean_chat
from nodes.classify_input import classify_input
from nodes.consultation_state import clear_state
from nodes.domain_profile import active_profile
from nodes.document_store import delete_user_documents
from nodes.telegram_reply import answer_callback, send_reply, typing_indicator
from nodes.topics import close_user_topics
from nodes.user_state import UserState, read_user_state, start_new_session

MENU_COMMANDS = {"start", "menu", "reset", "mode"}


def run_name() -> str:
    """Name runs after what happened and who did it, e.g. `cmd-start-user42`."""
    update = runtime.flow_run.parameters.get("update")
    if isinstance(update, dict):
        update = IncomingUpdate.model_validate(update)
    if isinstance(update, IncomingUpdate):
        return f"{update.kind}-user{update.user_id}"
    return "update"


def _say(update: IncomingUpdate, reply: Reply) -> list[Reply]:
    send_reply(update.origin, reply)
    return [reply]


def chat_branch(update: IncomingUpdate, state: UserState) -> list[Reply]:
    """Чат: each message is a question, answered by the chat flow — or, when the deployment
    carries a domain profile, by the consultation flow (seed 000)."""
    from flows.chat import chat
    from flows.consultation import consultation

    if not update.text:
        return _say(update, Reply(chat_id=update.chat_id, text=texts.CHAT_NEEDS_TEXT))
    with typing_indicator(update.origin, update.chat_id):
        if active_profile() is not None:
            answer = consultation(update.text, update.user_id, state.session_id)
        else:
            answer = chat(update.text, update.user_id, state.session_id)
    return _say(update, Reply(chat_id=update.chat_id, text=answer.text))


def documents_branch(update: IncomingUpdate, state: UserState) -> list[Reply]:
    """База: classify the message into items, index them in parallel, confirm what was indexed."""
    from flows.ingest import confirmation, ingest

    items = classify_input(update.text, update.attachments)
    if not items:
        return _say(update, Reply(chat_id=update.chat_id, text=texts.NOTHING_TO_INDEX))
    with typing_indicator(update.origin, update.chat_id):
        outcome = ingest(items, update.user_id, return_state=True)
    outcomes = outcome.result(raise_on_failure=False)
    return _say(update, Reply(chat_id=update.chat_id, text=confirmation(outcomes)))


def clean_base(update: IncomingUpdate) -> list[Reply]:
    """Ask first: deleting a whole base by a stray tap would be a loss."""
    if update.callback_data == "clean_base:yes":
        answer_callback(update.origin, update.callback_id)
        documents, _chunks = delete_user_documents(update.user_id)
        return _say(update, Reply(chat_id=update.chat_id, text=texts.BASE_CLEANED.format(n=documents)))
    if update.callback_data == "clean_base:no":
        answer_callback(update.origin, update.callback_id)
        return _say(update, Reply(chat_id=update.chat_id, text=texts.BASE_KEPT))
    return _say(update, Reply(chat_id=update.chat_id, text=texts.CLEAN_BASE_CONFIRM,
                              buttons=texts.CLEAN_BASE_BUTTONS))


@flow(name="handle-update", flow_run_name=run_name)
def handle_update(update: IncomingUpdate) -> list[Reply]:
    """Route one update. A store outage still gets the user a clear answer, and the run fails."""
    try:
        return _route(update)
    except StoreUnavailable:
        send_reply(update.origin, Reply(chat_id=update.chat_id, text=texts.STORE_DOWN))
        raise


def _route(update: IncomingUpdate) -> list[Reply]:
    if update.command == "clean_base" or (update.callback_data or "").startswith("clean_base"):
        return clean_base(update)
    if is_moderation_update(update):
        return moderation(update)
    if update.command == "clean_chat" or update.callback_data == "clean_chat":
        answer_callback(update.origin, update.callback_id)
        clean_chat(update.user_id)
        clear_state(update.user_id)
        close_user_topics(update.user_id)
        start_new_session(update.user_id, update.chat_id)
        return _say(update, Reply(chat_id=update.chat_id, text=texts.CHAT_CLEANED))
    if update.command in MENU_COMMANDS or update.callback_data is not None:
        return mode_switch(update)

    state = read_user_state(update.user_id)
    if state is None or state.current_mode is None:
        return _say(update, menu(update.chat_id, texts.NO_MODE_YET))
    if not (update.text or update.attachments or update.command):
        return _say(update, Reply(chat_id=update.chat_id, text=texts.EMPTY_MESSAGE))
    if state.current_mode == "chat":
        return chat_branch(update, state)
    return documents_branch(update, state)
