"""The main workflow: every Telegram (or console) update becomes one run of this flow.

It reads `user_state.current_mode` and branches, like the seed's n8n main
workflow: commands and button presses → mode switch; messages → the chat or
the documents branch.
"""

from __future__ import annotations

from prefect import flow, runtime

from flows import texts
from flows.mode_switch import menu, mode_switch
from grove.db import StoreUnavailable
from grove.messages import IncomingUpdate, Reply
from nodes.chat_history import clean_chat
from nodes.telegram_reply import send_reply
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
    return _say(update, Reply(chat_id=update.chat_id, text=texts.BRANCH_NOT_READY["chat"]))


def documents_branch(update: IncomingUpdate, state: UserState) -> list[Reply]:
    return _say(update, Reply(chat_id=update.chat_id, text=texts.BRANCH_NOT_READY["documents"]))


@flow(name="handle-update", flow_run_name=run_name)
def handle_update(update: IncomingUpdate) -> list[Reply]:
    """Route one update. A store outage still gets the user a clear answer, and the run fails."""
    try:
        return _route(update)
    except StoreUnavailable:
        send_reply(update.origin, Reply(chat_id=update.chat_id, text=texts.STORE_DOWN))
        raise


def _route(update: IncomingUpdate) -> list[Reply]:
    if update.command in MENU_COMMANDS or update.callback_data is not None:
        return mode_switch(update)
    if update.command == "clean_chat":
        clean_chat(update.user_id)
        start_new_session(update.user_id, update.chat_id)
        return _say(update, Reply(chat_id=update.chat_id, text=texts.CHAT_CLEANED))

    state = read_user_state(update.user_id)
    if state is None or state.current_mode is None:
        return _say(update, menu(update.chat_id, texts.NO_MODE_YET))
    if not (update.text or update.attachments or update.command):
        return _say(update, Reply(chat_id=update.chat_id, text=texts.EMPTY_MESSAGE))
    if state.current_mode == "chat":
        return chat_branch(update, state)
    return documents_branch(update, state)
