"""Moderation in Telegram: admins approve, edit or reject queued answers.

`/moderation` shows the oldest pending item with three buttons (`/moderation 42`
shows item 42). Approve writes
the pair to `knowledge_base` (tier 1 of the consultation at once); edit asks for
the corrected answer, which the admin's next message supplies; reject drops it.
Everyone not in GROVE_ADMIN_IDS is refused, whatever they send.
"""

from __future__ import annotations

from grove.core.observe import flow

from flows import texts
from grove.core.messages import IncomingUpdate, Reply
from grove.core.settings import get_settings
from nodes.store.dialogue_metrics import record_turn
from nodes.store.moderation import (ModerationItem, Review, approve, get_item, is_admin, item_being_edited, next_pending,
                              pending_count, reject, start_edit)
from nodes.telegram.reply import Sender


def editing_answer(update: IncomingUpdate) -> bool:
    """An admin's plain message while they edit a queued answer: the corrected answer (a store
    read, so asked by the message handler, not by a route's matcher)."""
    admins = get_settings().admin_ids
    return bool(update.text and not update.command and is_admin(update.user_id, admins)
                and item_being_edited.fn(update.user_id, admins) is not None)


def item_reply(chat_id: int, item: ModerationItem | None) -> Reply:
    if item is None:
        return Reply(chat_id=chat_id, text=texts.MODERATION_EMPTY)
    text = texts.MODERATION_ITEM.format(pending=pending_count(), id=item.id, culture=item.culture or "—",
                                        status=texts.MODERATION_STATUS.get(item.status, item.status),
                                        question=item.question, answer=item.edited_answer or item.answer)
    buttons = texts.moderation_buttons(item.id) if item.status == "pending" else []
    return Reply(chat_id=chat_id, text=text, buttons=buttons)


def _outcome(review: Review, done_text: str) -> str:
    if review.done:
        return done_text.format(id=review.item.id)
    status = texts.MODERATION_STATUS.get(review.reason or "", review.reason)
    return texts.MODERATION_ALREADY.format(id=review.item.id, status=status)


@flow(name="moderation", flow_run_name="moderation-user{update.user_id}")
def moderation(update: IncomingUpdate, sender: Sender) -> list[Reply]:
    chat, admins = update.chat_id, get_settings().admin_ids
    if not is_admin(update.user_id, admins):
        # The terminal gate: only admins write to the knowledge base; each refusal is counted.
        record_turn(update.user_id, "moderation", "-", [], ["terminal_gate"],
                    {"attempt": update.callback_data or update.command})
        sender.answer_callback(update.origin, update.callback_id, texts.MODERATION_ONLY_ADMINS)
        return [Reply(chat_id=chat, text=texts.MODERATION_ONLY_ADMINS)]
    if update.callback_data:
        sender.answer_callback(update.origin, update.callback_id)
        _, action, raw_id = (update.callback_data.split(":") + ["", ""])[:3]
        if not raw_id.isdigit():
            return [item_reply(chat, next_pending(update.user_id, admins))]
        item_id = int(raw_id)
        if action == "edit":
            review = start_edit(item_id, update.user_id, admins)
            if review.done:
                return [Reply(chat_id=chat, text=texts.MODERATION_EDIT_PROMPT.format(id=item_id))]
            return [Reply(chat_id=chat, text=_outcome(review, "")),
                    item_reply(chat, next_pending(update.user_id, admins))]
        if action == "approve":
            done = _outcome(approve(item_id, update.user_id, admins), texts.MODERATION_APPROVED)
        elif action == "reject":
            done = _outcome(reject(item_id, update.user_id, admins), texts.MODERATION_REJECTED)
        else:
            done = texts.UNKNOWN_BUTTON_TOAST
        return [Reply(chat_id=chat, text=done), item_reply(chat, next_pending(update.user_id, admins))]
    editing = item_being_edited(update.user_id, admins)
    if editing is not None and update.text and not update.command:
        done = _outcome(approve(editing.id, update.user_id, admins, update.text), texts.MODERATION_APPROVED)
        return [Reply(chat_id=chat, text=done), item_reply(chat, next_pending(update.user_id, admins))]
    if update.command_args.strip().lstrip("#").isdigit():  # `/moderation 42`: that item
        item = get_item(int(update.command_args.strip().lstrip("#")), update.user_id, admins)
        return [item_reply(chat, item)]
    return [item_reply(chat, next_pending(update.user_id, admins))]
