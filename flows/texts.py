"""What the bot says in the mode-switch and routing flows (Russian, as the users speak)."""

from grove.core.messages import Button
from nodes.ingestion.formats import file_kinds

MODE_MENU = "Выберите режим работы"
MODE_BUTTONS = [[Button(label="Чат", data="chat"), Button(label="База", data="documents")]]

MODE_CONFIRMED = {
    "chat": (
        "Режим «Чат» включён.\n"
        "Задавайте вопросы: я отвечу и при необходимости загляну в ваши документы.\n"
        "/clean_chat — очистить историю, /start — сменить режим."
    ),
    "documents": (
        "Режим «База» включён.\n"
        f"Присылайте ссылки, файлы ({file_kinds()}), голосовые сообщения, аудио и видео — "
        "я проиндексирую их и подтвержу.\n"
        "/clean_base — очистить вашу базу, /start — сменить режим."
    ),
}
MODE_TOAST = {"chat": "Режим: Чат", "documents": "Режим: База"}

UNKNOWN_BUTTON = "Эта кнопка устарела или мне неизвестна. Выберите режим работы:"
UNKNOWN_BUTTON_TOAST = "Неизвестная кнопка"
NO_MODE_YET = "Сначала выберите режим работы:"
CHAT_NEEDS_TEXT = (
    "В режиме «Чат» я отвечаю на вопросы — текстом или голосом. Чтобы добавить файл в базу, "
    "переключитесь в режим «База»: /start."
)

GROUP_GO_PRIVATE = ("Ваша база и история чата — личные, поэтому в группах я с ними не работаю и ничего "
                    "не сохраняю. Напишите мне в личные сообщения: нажмите на моё имя и «Написать», "
                    "там /start.")

HELP = f"""Я веду вашу личную базу знаний и отвечаю на вопросы по ней.

Режимы (переключаются командой /start):
• «База» — присылайте ссылки, файлы ({file_kinds()}), голосовые, аудио и видео: я их проиндексирую и сообщу, что сохранилось.
• «Чат» — задавайте вопросы текстом: я ищу ответ в вашей базе и называю источники («Информация взята из: …»). Пока я пишу, ответ появляется в черновике — сначала найденные фрагменты, потом мои слова; готовый ответ приходит одним сообщением. Если ответ уже не нужен, нажмите «⏹ Стоп» — я остановлюсь и оставлю то, что успел показать. Я помню последние 15 вопросов и ответов.

Ограничения:
• файл — до 20 МБ (столько Telegram отдаёт ботам; на своём сервере Bot API — больше);
• очень длинный вопрос я прочитаю только с начала и скажу об этом;
• в группах я с личной базой не работаю — пишите мне в личные сообщения."""
# /help ends with «Команды: …», the menu's commands (flows/handlers/help.py).


def voice_heard(text: str, limit: int = 300) -> str:
    """The transcript shown back above the answer, so a misheard question is seen at once."""
    shown = text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
    return f"🎤 «{shown}»"


def question_cut(kept: int, original: int) -> str:
    """Said above the answer to a question too long for the model."""
    return (f"✂️ Сообщение очень длинное ({original} символов): я ответил на его начало, первые {kept} "
            "символов. Длинный текст лучше прислать в режиме «База» — тогда по нему можно задавать вопросы.")


CHAT_CLEANED = "История чата очищена."
ANSWER_STOPPED = "⏹ Ответ остановлен по вашей просьбе."
STORE_DOWN = ("База данных сейчас недоступна. Ваше сообщение не потеряно: я отвечу на него, "
              "как только она снова заработает.")
INTERNAL_ERROR = ("Не получилось обработать это сообщение: внутренняя ошибка. Она записана, "
                  "мы разберёмся; попробуйте, пожалуйста, ещё раз или иначе.")
GAVE_UP = ("Не получилось обработать это сообщение: его обработка несколько раз прерывалась. "
           "Попробуйте, пожалуйста, ещё раз или иначе.")
EMPTY_MESSAGE = "Я понимаю текст, ссылки, файлы, голосовые сообщения и видео. Это сообщение пустое."
# A chat turn the deadline cut while passages (and the model's first words) were on screen: they stay the answer.
ANSWER_CUT = "⏱ Модель не успела дописать ответ за отведённое время — вот что я успел найти и показать."
# A planned turn the deadline ended before its last step: the passages its searches found are the answer.
PLAN_CUT = "⏱ Не успел сопоставить найденное за отведённое время. Вот что об этом есть в ваших документах:"
# No chat answer at all (the model failed): the question is kept, and «ещё раз» answers it.
APOLOGY = ("Извините, сейчас я не могу ответить: сервис ответов недоступен. Ваш вопрос сохранён — "
           "повторите его чуть позже или напишите «ещё раз».")

NOTHING_TO_INDEX = (
    f"Пришлите ссылку, файл ({file_kinds()}), голосовое сообщение, аудио или видео — "
    "или текст длиннее пары слов, и я добавлю его в вашу базу."
)
CLEAN_BASE_CONFIRM = "Удалить все ваши документы из базы? Это нельзя отменить."
CLEAN_BASE_STALE = "Эта кнопка больше не действует. Чтобы очистить базу, отправьте /clean_base ещё раз."
CLEAN_BASE_STALE_TOAST = "Кнопка устарела"


def index_offer(labels: list[str]) -> str:
    """A file sent in Чат: answering questions is this mode's job, so indexing is offered, not done."""
    names = ", ".join(f"«{label}»" for label in labels)
    return (f"В режиме «Чат» я отвечаю на вопросы. Добавить {names} в вашу базу, чтобы по "
            f"{'нему' if len(labels) == 1 else 'ним'} можно было спрашивать?")


def index_offer_buttons(token: str) -> list[list[Button]]:
    """One-time buttons; the items wait in the token's payload (nodes/store/confirmations.py)."""
    return [[Button(label="Добавить в базу", data=f"index_offer:yes:{token}"),
             Button(label="Не нужно", data=f"index_offer:no:{token}")]]


def edit_replaced(documents: int) -> str:
    """An edited message in База: what its earlier version had indexed is gone."""
    return f"✏️ Сообщение изменено — прежняя версия удалена из базы (документов: {documents})."


INDEX_OFFER_DECLINED = "Хорошо, не добавляю."
INDEX_OFFER_STALE = "Это предложение уже недействительно — пришлите файл ещё раз."


def clean_base_buttons(token: str) -> list[list[Button]]:
    """One-time buttons: the token is valid once, for this user and chat (nodes/store/confirmations.py)."""
    return [[Button(label="Да, удалить", data=f"clean_base:yes:{token}"),
             Button(label="Отмена", data=f"clean_base:no:{token}")]]


def ingest_accepted(labels: list[str], waiting: int = 0) -> str:
    """The instant answer to an upload; the same message later shows progress and the result."""
    names = ", ".join(f"«{label}»" for label in labels[:5]) + (f" и ещё {len(labels) - 5}" if len(labels) > 5 else "")
    queue = f" (после {waiting} предыдущ{'его' if waiting == 1 else 'их'})" if waiting else ""
    return f"Принял {names}, индексирую{queue}… Можно продолжать писать: я отвечу, не дожидаясь конца."
BASE_CLEANED = "База очищена: удалено документов — {n}."
BASE_KEPT = "Хорошо, база не тронута."

# --- consultation --------------------------------------------------------
CONSULTATION_APOLOGY = ("Извините, сейчас я не могу ответить: сервис ответов недоступен. "
                        "Повторите вопрос чуть позже.")
CONSULTATION_CANNOT_TELL = ("Не могу определить культуру по вашим ответам, а общий совет без неё был бы "
                            "неточным. Выберите культуру кнопкой ниже или назовите её словами.")

# Shown instead of a degenerate draft: quoting the knowledge base, or saying plainly there is no answer.
CONSULTATION_EXTRACT_LEAD = "В базе знаний об этом сказано так:"
# A consultation answer the deadline cut: the knowledge base's passages found for it are the answer.
CONSULTATION_CUT = "⏱ Не успел составить ответ за отведённое время. Вот что об этом есть в базе знаний:"
# Instead of a degenerate draft when no quoted sentence covers the question: the nearest passages, said to be so.
CONSULTATION_NEAREST_LEAD = "Прямого ответа в базе знаний не нашёл. Ближе всего к вопросу вот это:"
# Instead of a draft that repeats the last reply or speaks of another intent (watering for feeding).
CONSULTATION_CROP_LEAD = "В базе знаний по культуре «{culture}» об этом сказано так:"
CONSULTATION_NO_PASSAGE = ("В базе знаний по культуре «{culture}» пока нет ответа на этот вопрос. "
                           "Попробуйте задать его иначе.")
CONSULTATION_NOTHING_MORE = ("Больше в базе знаний по культуре «{culture}» об этом ничего нет: всё, что в ней "
                             "сказано, — в ответе выше.")
CONSULTATION_NO_ANSWER = ("В базе знаний пока нет ответа на этот вопрос, а уверенно ответить сам я не могу. "
                          "Назовите культуру и сорт или задайте вопрос иначе.")

# --- moderation (admins only) ---------------------------------------------
MODERATION_ONLY_ADMINS = "Модерация доступна только администраторам."
MODERATION_EMPTY = "Очередь модерации пуста."
MODERATION_ITEM = ("На модерации: {pending}\n\n#{id} · {status} · культура: {culture}\n\n"
                   "Вопрос:\n{question}\n\nОтвет:\n{answer}")
MODERATION_APPROVED = "Одобрено: ответ #{id} добавлен в базу знаний."
MODERATION_REJECTED = "Отклонено: ответ #{id} не попадёт в базу знаний."
MODERATION_EDIT_PROMPT = "Пришлите исправленный ответ для #{id} одним сообщением."
MODERATION_ALREADY = "Ответ #{id} уже рассмотрен ({status})."
MODERATION_STATUS = {"approved": "одобрен", "rejected": "отклонён", "pending": "ожидает"}


def moderation_buttons(item_id: int) -> list[list[Button]]:
    return [[Button(label="Одобрить", data=f"mod:approve:{item_id}"),
             Button(label="Изменить", data=f"mod:edit:{item_id}"),
             Button(label="Отклонить", data=f"mod:reject:{item_id}")]]
