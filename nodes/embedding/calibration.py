"""Calibration texts for the int8 export: what the encoder's activations look like on real input.

The export measures, channel by channel, how large the inputs of each MLP down projection get
(`nodes/embedding/onnx_encoder.py`, SmoothQuant-style scaling). It needs text shaped like what grove
embeds — manual pages, how-to steps, commands, numbers, Russian and English, with the query
and document prompts — not any particular user's documents. A few dozen short passages are
enough for the peaks to settle.
"""

from __future__ import annotations

CALIBRATION_TEXTS: tuple[str, ...] = (
    "Чтобы установить программу, откройте терминал и выполните команду sudo apt install gimp. "
    "После установки приложение появится в меню «Графика».",
    "Нажмите Ctrl+S, чтобы сохранить документ. Если файл сохраняется впервые, откроется диалог "
    "выбора папки и имени файла.",
    "Параметр «Порог» определяет, насколько похожими должны быть цвета соседних точек, чтобы они "
    "попали в выделение. Значение по умолчанию — 15.",
    "В таблице 3 перечислены поддерживаемые форматы: PDF, DOCX, ODT, HTML, TXT и Markdown. "
    "Размер файла не должен превышать 20 МБ.",
    "Если при запуске появляется сообщение «Permission denied», проверьте права доступа к каталогу "
    "/var/lib/app и владельца файлов.",
    "Глава 4. Настройка сети. В этом разделе описано, как задать статический IP-адрес, шлюз и "
    "DNS-серверы в файле /etc/network/interfaces.",
    "Клубнику подкармливают трижды за сезон: весной азотом, во время цветения калием и после "
    "сбора урожая комплексным удобрением.",
    "Рассада томатов высаживается в грунт, когда минует угроза заморозков, обычно в конце мая; "
    "расстояние между растениями — 40–50 см.",
    "Вопрос: как вернуть удалённый файл? Ответ: откройте корзину, выделите файл и выберите "
    "«Восстановить» в контекстном меню.",
    "Резервная копия базы данных создаётся командой pg_dump -Fc mydb > mydb.dump и "
    "восстанавливается командой pg_restore.",
    "Стили абзацев задают шрифт, отступы и интервалы. Чтобы изменить стиль, щёлкните по нему "
    "правой кнопкой мыши в панели «Стили» и выберите «Изменить».",
    "Оглавление обновляется автоматически при печати документа или вручную через меню "
    "«Сервис → Обновить → Все».",
    "To install the package, run pip install --upgrade requests. Version 2.31 or later is required "
    "for Python 3.12.",
    "The configuration file is read at startup. Options set on the command line override the "
    "values in config.yaml.",
    "Press Shift while dragging to keep the aspect ratio. Hold Alt to resize from the centre.",
    "Chapter 2 describes the installation on Windows, macOS and Linux; chapter 3 the first steps.",
    "If the server does not respond within 30 seconds, the client retries three times and then "
    "reports an error.",
    "Table 1 lists the keyboard shortcuts: Ctrl+C copies, Ctrl+V pastes, Ctrl+Z undoes the last step.",
    "Системные требования: 4 ГБ оперативной памяти, 2 ГБ свободного места на диске, процессор "
    "с поддержкой SSE4.2.",
    "Инструмент «Штамп» копирует участок изображения из источника в другое место. Источник "
    "задаётся щелчком с нажатой клавишей Ctrl.",
    "Команда tlmgr update --all обновляет все установленные пакеты TeX Live; tlmgr info пакет "
    "показывает сведения о нём.",
    "Для проверки орфографии нажмите F7. Слова с ошибками подчёркиваются красной волнистой линией.",
    "Ежемесячный отчёт формируется первого числа и отправляется на адрес, указанный в настройках "
    "профиля.",
    "Лимит запросов к API — 100 в минуту на один ключ; при превышении сервер возвращает код 429.",
)

QUERIES: tuple[str, ...] = (
    "Как сохранить документ?",
    "Какой командой обновить пакеты?",
    "Когда подкармливать клубнику?",
    "Что делать, если появляется Permission denied?",
    "How do I keep the aspect ratio?",
    "Какие форматы файлов поддерживаются?",
    "Как восстановить базу данных из резервной копии?",
    "Сколько запросов в минуту разрешено?",
)
