"""Real test documents, generated on the fly, and a small web site on 127.0.0.1.

Nothing here is a canned result: PDFs are drawn with reportlab (DejaVu Sans is
embedded so Cyrillic survives), DOCX files are written with python-docx, text
files are encoded for real, and `HtmlSite` serves pages over real HTTP.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO
from xml.sax.saxutils import escape

from grove.core.settings import reset_settings

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
FONT_NAME = "DejaVuSans"


# --- settings ------------------------------------------------------------------


@contextlib.contextmanager
def grove_settings(**values: object) -> Iterator[None]:
    """Set GROVE_<NAME> env vars for the block, re-reading settings before and after."""
    saved = {}
    for key, value in values.items():
        name = f"GROVE_{key.upper()}"
        saved[name] = os.environ.get(name)
        os.environ[name] = str(value).lower() if isinstance(value, bool) else str(value)
    reset_settings()
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old
        reset_settings()


# --- PDF -----------------------------------------------------------------------


def _register_font() -> str:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    if FONT_NAME not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(TTFont(FONT_NAME, str(FONT_DIR / "DejaVuSans.ttf")))
    return FONT_NAME


def _wrap(text: str, width: int = 80) -> list[str]:
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split():
            if line and len(line) + 1 + len(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}".strip()
        lines.append(line)
    return lines


def make_pdf(pages: list[str], path: str | Path | IO[bytes], *, title: str | None = None,
             author: str | None = None) -> Path:
    """A PDF with one page per string, real (embedded-font) Cyrillic text."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    target = path if hasattr(path, "write") else str(path)  # a path or a binary stream
    font = _register_font()
    pdf = canvas.Canvas(target, pagesize=A4)
    if title:
        pdf.setTitle(title)
    if author:
        pdf.setAuthor(author)
    _, height = A4
    for text in pages:
        pdf.setFont(font, 11)
        y = height - 60
        for line in _wrap(text):
            pdf.drawString(50, y, line)
            y -= 15
            if y < 50:
                break
        pdf.showPage()
    pdf.save()
    return path  # type: ignore[return-value]


# A manual laid out like a real one: running header and footer on every page, words
# hyphenated at line ends, an outline, roman page labels before the first chapter,
# a blank page, a "continued" marker, headings set larger than the body text.
MANUAL_HEADER = "Руководство по установке Grove · издание 2024"
MANUAL_FOOTER = "© 2024 Команда Grove. Все права защищены."
MANUAL_CONTINUED = "(продолжение на следующей странице)"
MANUAL_TITLE_LINE = "Руководство по установке Grove"
WINDOWS_LINES = [
    "Под Windows установщик скачивают со страницы проекта и запус-",
    "кают от имени администратора. Программа спрашивает, куда поместить",
    "файлы, и предлагает папку C:\\Program Files\\Grove по умолчанию.",
    "Если антивирус задерживает установку, добавьте папку в исклю-",
    "чения и запустите установщик снова. После установки в меню «Пуск»",
    "появляется ярлык, а служба Grove стартует автоматически при вхо-",
    "де в систему. Журнал установки лежит в папке %TEMP%\\grove-setup.log,",
    "его стоит приложить к сообщению об ошибке. Для тихой установки в",
    "корпоративной сети используйте ключ /quiet и файл ответов answers.ini,",
    "который описывает путь установки, порт службы и учётную запись.",
    "Обновление под Windows выполняется тем же установщиком: он находит",
    "прежнюю версию, останавливает службу, заменяет файлы и снова запус-",
    "кает службу, сохраняя настройки пользователя и базу документов.",
    "Удаляют программу через «Параметры» → «Приложения»; база документов",
    "при этом остаётся на диске, пока вы не удалите её папку вручную.",
]
LINUX_LINES = [
    "В Linux пакет ставят из репозитория: для Debian и Ubuntu есть готовый",
    "Debian-",
    "пакет grove, который подключают командой add-apt-repository и уста-",
    "навливают через apt install grove. Пакет создаёт системного пользова-",
    "теля grove, кладёт конфигурацию в /etc/grove/grove.toml и регистриру-",
    "ет службу systemd. Если нужно что-то поменять до первого запуска, пра-",
    "вьте конфигурацию и только потом включайте службу командой systemctl",
    "enable --now grove. Для Fedora собран RPM, его ставят через dnf install",
    "grove; для Arch Linux пакет лежит в AUR. Сборка из исходников требует",
    "Python 3.11 и компилятора C; после make install служба не регистриру-",
    "ется, поэтому юнит systemd копируют вручную из каталога contrib. Что-",
    "то ещё? Журналы службы читают командой journalctl -u grove, а уровень",
    "подробности задают переменной GROVE_LOG_LEVEL в файле окружения.",
    "Обновление в Linux приходит вместе с обновлениями системы; при смене",
    "мажорной версии служба перезапускается и переносит базу автоматически.",
]
PROXY_LINES = [
    "Если компьютер выходит в интернет через прокси-сервер, укажите его",
    "адрес в параметре proxy_url. Логин и пароль прокси хранятся отдель-",
    "но, в зашифрованном хранилище, и в журналах никогда не показываются.",
    "Прокси нужен только для загрузки обновлений: поиск по документам",
    "работает без сети, потому что все модели лежат на диске локально.",
]


def make_manual_pdf(path: str | Path, *, title: str | None = "untitled") -> Path:
    """A seven-page manual (see MANUAL_*): labels i, ii, iii, then 1-4; page iii is blank."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    font = _register_font()
    path = Path(path)
    pdf = canvas.Canvas(str(path), pagesize=A4)
    if title is not None:
        pdf.setTitle(title)
    _, height = A4
    labels = ["i", "ii", "iii", "1", "2", "3", "4"]
    # (heading level 0 = body line, 1-2 = heading), text
    pages: list[list[tuple[int, str]]] = [
        [(-1, MANUAL_TITLE_LINE), (0, "Издание для администраторов и пользователей."),
         (0, "Эта книга описывает установку и первую настройку программы.")],
        [(1, "Предисловие"), (0, "Руководство написано для тех, кто ставит Grove впервые."),
         (0, "Разделы можно читать в любом порядке: каждый описывает одну систему.")],
        [],
        [(1, "1 Установка"), (2, "1.1 Windows"), *[(0, line) for line in WINDOWS_LINES],
         (0, MANUAL_CONTINUED)],
        [(2, "1.2 Linux"), *[(0, line) for line in LINUX_LINES], (0, MANUAL_CONTINUED)],
        [(1, "2 Настройка"), (2, "2.1 Прокси"), *[(0, line) for line in PROXY_LINES],
         (0, MANUAL_CONTINUED)],
        [(2, "2.2 Резервные копии"),
         (0, "Резервную копию базы делают командой grove backup: она сохраняет"),
         (0, "документы, векторы и настройки в один архив с датой в имени.")],
    ]
    pdf.addPageLabel(0, style="ROMAN_LOWER")
    pdf.addPageLabel(3, style="ARABIC", start=1)
    for number, lines in enumerate(pages):
        if lines:
            pdf.setFont(font, 9)
            pdf.drawString(50, height - 35, MANUAL_HEADER)
            pdf.drawString(50, 40, MANUAL_FOOTER)
            pdf.drawString(290, 25, f"— {labels[number]} —")
        y = height - 80
        for level, text in lines:
            size = {-1: 22, 0: 11, 1: 17, 2: 14}[level]
            if level > 0:
                key = f"h{number}-{y}"
                pdf.bookmarkHorizontal(key, 0, y + size)
                pdf.addOutlineEntry(text, key, level=level - 1)
            pdf.setFont(font, size)
            pdf.drawString(50, y, text)
            y -= size + 6
        pdf.showPage()
    pdf.save()
    return path


MANUAL_HTML_TITLE = "Выделение прямоугольником"


def manual_html() -> str:
    """A help page like the GIMP manual's: a menu path made of inline elements, nested
    inline code, a list right after its lead-in line, navigation around the content."""
    return f"""<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml"><head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8" />
<title>{MANUAL_HTML_TITLE}</title></head><body>
<div class="navheader"><table><tr><td><a href="prev.html">Пред.</a></td><td><a href="up.html">Наверх</a></td>
<td><a href="next.html">След.</a></td></tr></table></div>
<div class="sect1"><h1 class="title">{MANUAL_HTML_TITLE}</h1>
<p>Инструмент выделяет прямоугольные области активного слоя. Это самый простой, но очень часто
используемый тип выделения, и его стоит освоить первым.</p>
<div class="sect2"><h2>Активация инструмента</h2>
<p>Инструмент можно активировать несколькими способами:</p>
<ul class="itemizedlist">
<li><p>из меню изображения <span class="guimenu">Инструменты</span> → <span class="guisubmenu">Выделение</span>
→ <span class="guimenuitem">Прямоугольное выделение</span>;</p></li>
<li><p>щелчком по значку инструмента на панели инструментов;</p></li>
<li><p>клавишей быстрого доступа <span class="keycap"><strong>R</strong></span>.</p></li>
</ul></div>
<div class="sect2"><h2>Сценарий выделения</h2>
<p>Выделение можно задать из консоли: вызовите <code class="function">gimp-image-select-rectangle</code>
с параметрами <code><em class="parameter">image</em>, <em class="parameter">operation</em>, <em>x</em>, <em>y</em></code>
и размерами области в пикселях.</p>
<h3>Ширина и высота</h3>
<p>Ширина и высота задаются в пикселях, а положение отсчитывается от левого верхнего угла холста.</p>
</div></div>
<div class="navfooter"><a href="prev.html">1. Инструменты выделения</a> <a href="index.html">Начало</a>
<a href="next.html">3. Эллиптическое выделение</a><a href="https://bugs.example/">Report a bug</a></div>
</body></html>"""


def make_headed_docx(path: str | Path, *, russian_styles: bool = False) -> Path:
    """A DOCX with a title and heading styles (built-in «Heading N», or styles named
    «Заголовок N» with an outline level, as a Russian Word/LibreOffice writes them)."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    names = {1: "Heading 1", 2: "Heading 2"}
    if russian_styles:
        for level in (1, 2):
            style = document.styles.add_style(f"Заголовок {level}", WD_STYLE_TYPE.PARAGRAPH)
            outline = OxmlElement("w:outlineLvl")
            outline.set(qn("w:val"), str(level - 1))
            style.element.get_or_add_pPr().append(outline)
            names[level] = f"Заголовок {level}"
    document.add_paragraph("Обслуживание сада", style="Title")
    document.add_paragraph("Краткое введение: как ухаживать за садом круглый год.")
    document.add_paragraph("Весна", style=names[1])
    document.add_paragraph("Весной обрезают сухие ветви и белят стволы известью.")
    document.add_paragraph("Полив", style=names[2])
    document.add_paragraph("Молодые деревья поливают раз в неделю, ведро под каждое дерево.")
    document.add_paragraph("Осень", style=names[1])
    document.add_paragraph("Осенью собирают опавшие листья и укрывают корни мульчей.")
    document.save(str(path))
    return Path(path)


MARKDOWN_NOTES = """# Заметки садовода

Общие мысли о саде.

## Малина

Малину подвязывают к шпалере весной.

```
# это комментарий в коде, а не заголовок
echo "полить малину"
```

### Сорта

Ремонтантные сорта плодоносят до заморозков.

Смородина
---------

Смородину подкармливают калием после сбора ягод.
"""


def make_encrypted_pdf(path: str | Path, *, user_password: str = "секрет",
                       owner_password: str = "owner", text: str = "Секретный отчёт о продажах.") -> Path:
    """A PDF encrypted with pypdf (AES-256). An empty user password opens without asking."""
    from pypdf import PdfReader, PdfWriter

    plain = io.BytesIO()
    make_pdf([text], plain)
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(plain.getvalue())))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="AES-256")
    path = Path(path)
    with path.open("wb") as handle:
        writer.write(handle)
    return path


def make_image_only_pdf(path: str | Path, pages: int = 2) -> Path:
    """A 'scanned' PDF: shapes and a raster image on each page, no text at all."""
    from PIL import Image, ImageDraw
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    image = Image.new("RGB", (300, 120), "white")
    ImageDraw.Draw(image).rectangle((10, 10, 290, 110), outline="black", width=4)
    path = Path(path)
    pdf = canvas.Canvas(str(path), pagesize=A4)
    for _ in range(pages):
        pdf.rect(60, 500, 200, 100, fill=1)
        pdf.circle(300, 300, 50, fill=0)
        pdf.drawImage(ImageReader(image), 60, 150, width=300, height=120)
        pdf.showPage()
    pdf.save()
    return path


# --- DOCX ----------------------------------------------------------------------


def make_docx(paragraphs: list[str], table_rows: list[list[str]] | None,
              path: str | Path | IO[bytes], *,
              heading: str | None = None, after_table: list[str] | None = None,
              title: str | None = None, author: str | None = None) -> Path:
    """A real DOCX: optional heading, paragraphs, a table, then more paragraphs."""
    import docx

    document = docx.Document()
    if heading:
        document.add_heading(heading, level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    if table_rows:
        table = document.add_table(rows=len(table_rows), cols=len(table_rows[0]))
        for row, values in zip(table.rows, table_rows):
            for cell, value in zip(row.cells, values):
                cell.text = value
    for text in after_table or []:
        document.add_paragraph(text)
    if title:
        document.core_properties.title = title
    if author:
        document.core_properties.author = author
    document.save(path if hasattr(path, "write") else str(path))
    return path  # type: ignore[return-value]


def make_zip_bomb_docx(path: str | Path, *, megabytes: int = 16) -> Path:
    """A real, openable DOCX plus one huge, extremely compressible entry."""
    base = io.BytesIO()
    make_docx(["Обычный абзац."], None, base)
    path = Path(path)
    with zipfile.ZipFile(io.BytesIO(base.getvalue())) as source, \
            zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            target.writestr(item, source.read(item.filename))
        block = b"\x00" * (1024 * 1024)
        with target.open("word/media/padding.bin", "w", force_zip64=True) as entry:
            for _ in range(megabytes):
                entry.write(block)
    return path


def make_zip(path: str | Path, entries: dict[str, bytes]) -> Path:
    path = Path(path)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


# --- text ----------------------------------------------------------------------


def make_text_file(path: str | Path, text: str, encoding: str, *, bom: bool = False) -> Path:
    """Text encoded as asked; `bom=True` prepends the BOM for utf-8 / utf-16-le / utf-16-be."""
    boms = {"utf-8": b"\xef\xbb\xbf", "utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}
    data = text.encode(encoding)
    if bom:
        data = boms[encoding] + data
    path = Path(path)
    path.write_bytes(data)
    return path


def make_png(path: str | Path) -> Path:
    from PIL import Image

    path = Path(path)
    Image.new("RGB", (32, 32), "red").save(path, format="PNG")
    return path


# --- a web site on 127.0.0.1 ---------------------------------------------------


def make_self_signed_cert(directory: str | Path, hostname: str) -> tuple[Path, Path]:
    """A self-signed certificate (its own CA) for `hostname`: (cert.pem, key.pem)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory = Path(directory)
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert_path, key_path


ARTICLE_TITLE = "Как вырастить рощу у себя на даче"
ARTICLE_AUTHOR = "Мария Лесная"
ARTICLE_DATE = "2024-03-15"
ARTICLE_SENTENCES = [
    "Берёзовая роща начинается с правильно выбранного участка и терпения садовника.",
    "Саженцы лучше высаживать ранней весной, пока почва ещё влажная после таяния снега.",
    "Между деревьями оставляют не меньше трёх метров, чтобы кронам хватало света.",
    "Первые два года молодые берёзы поливают раз в неделю, если лето выдалось засушливым.",
    "Мульча из опилок и хвои удерживает влагу и защищает корни от перегрева.",
    "Через пять лет на месте пустыря появляется настоящая роща с тенью и птичьими голосами.",
]
NAV_MARKER = "Главное меню сайта Садовод"
FOOTER_MARKER = "Все права защищены редакцией Садовод"
COMMENT_MARKER = "Отличная статья, спасибо автору за советы"


def article_html(charset: str = "utf-8") -> str:
    paragraphs = "\n".join(
        f"<p>{' '.join(ARTICLE_SENTENCES[i:i + 2])} Эту мысль стоит запомнить каждому, "
        f"кто хочет видеть вокруг дома живой лес, а не голую землю.</p>"
        for i in range(0, len(ARTICLE_SENTENCES), 2)
    )
    nav = "".join(f'<li><a href="/s{i}">{NAV_MARKER}: раздел {i}</a></li>' for i in range(8))
    return f"""<!DOCTYPE html>
<html lang="ru"><head>
<meta charset="{charset}">
<title>{ARTICLE_TITLE} — Садовод</title>
<meta name="author" content="{ARTICLE_AUTHOR}">
<meta property="article:published_time" content="{ARTICLE_DATE}T09:00:00+03:00">
<meta property="og:title" content="{ARTICLE_TITLE}">
</head><body>
<header><div class="logo">Садовод</div><nav class="menu"><ul>{nav}</ul></nav></header>
<main><article>
<h1>{ARTICLE_TITLE}</h1>
<p class="byline">Автор: {ARTICLE_AUTHOR}, {ARTICLE_DATE}</p>
{paragraphs}
</article>
<section id="comments" class="comments"><h2>Комментарии</h2>
<div class="comment"><p>{COMMENT_MARKER}! Посадил берёзы прошлой весной.</p></div>
<div class="comment"><p>{COMMENT_MARKER}, очень пригодилось на участке.</p></div>
</section></main>
<aside class="sidebar"><h3>Популярное</h3><ul><li><a href="/p1">Десять лучших сортов огурцов</a></li></ul></aside>
<footer class="footer"><p>© 2024 {FOOTER_MARKER}. Перепечатка запрещена.</p>
<p><a href="/about">О проекте</a> · <a href="/ads">Реклама</a></p></footer>
</body></html>"""


@dataclass
class Route:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay: float = 0.0
    stream: int = 0  # > 0: send this many extra bytes with no Content-Length


class HtmlSite:
    """A threaded HTTP server on 127.0.0.1 with the routes the fetch tests need.

    `requests` records (path, Host header) of every request it received.
    Extra routes: `site.routes["/x"] = Route(...)`.
    """

    def __init__(self, *, slow_seconds: float = 1.5, huge_bytes: int = 3 * 1024 * 1024,
                 tls: tuple[Path, Path] | None = None) -> None:
        self.tls = tls  # (certificate, key) PEM files: serve https
        self.sni_names: list[str | None] = []
        self.requests: list[tuple[str, str | None]] = []
        self.routes: dict[str, Route | Callable[[], Route]] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        html = article_html().encode("utf-8")
        html_cp1251 = article_html("windows-1251").encode("cp1251")
        self.routes.update({
            "/article": Route(headers={"Content-Type": "text/html; charset=utf-8"}, body=html),
            "/article-cp1251": Route(headers={"Content-Type": "text/html"}, body=html_cp1251),
            "/plain": Route(
                headers={"Content-Type": "text/plain; charset=koi8-r"},
                body="\n".join(ARTICLE_SENTENCES).encode("koi8-r"),
            ),
            "/redirect-metadata": Route(
                302, {"Location": "http://169.254.169.254/latest/meta-data/"}),
            "/redirect-private": Route(301, {"Location": "http://10.0.0.7:8080/admin"}),
            "/redirect-file": Route(302, {"Location": "file:///etc/passwd"}),
            "/redirect-relative": Route(302, {"Location": "article"}),
            "/chain/0": Route(302, {"Location": "/article"}),
            "/chain/1": Route(302, {"Location": "/chain/0"}),
            "/chain/2": Route(307, {"Location": "/chain/1"}),
            "/loop": Route(302, {"Location": "/loop"}),
            "/missing": Route(404, {"Content-Type": "text/html"}, b"<h1>Not found</h1>"),
            "/forbidden": Route(403, {"Content-Type": "text/html"}, b"<h1>Forbidden</h1>"),
            "/error": Route(500, {"Content-Type": "text/html"}, b"<h1>Internal error</h1>"),
            "/busy": Route(429, {"Retry-After": "30"}, b"slow down"),
            "/slow": Route(headers={"Content-Type": "text/html; charset=utf-8"}, body=html,
                           delay=slow_seconds),
            "/huge": Route(headers={"Content-Type": "text/html; charset=utf-8"},
                           body=b"<html><body><p>", stream=huge_bytes),
            "/huge-declared": Route(
                headers={"Content-Type": "text/html; charset=utf-8"},
                body=b"<html><body>" + b"x" * huge_bytes),
            "/empty": Route(headers={"Content-Type": "text/html; charset=utf-8"},
                            body=b"<html><head><title></title></head><body></body></html>"),
            "/binary": Route(headers={"Content-Type": "application/octet-stream"},
                             body=random.Random(7).randbytes(4096)),
            "/image": Route(headers={"Content-Type": "image/png"},
                            body=b"\x89PNG\r\n\x1a\n" + bytes(64)),
        })

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{path}"

    def hits(self, path: str) -> int:
        return sum(1 for seen, _ in self.requests if seen == path)

    def __enter__(self) -> HtmlSite:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # close-delimited bodies for streamed routes

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                site.requests.append((self.path, self.headers.get("Host")))
                route = site.routes.get(self.path.split("?", 1)[0])
                if callable(route):
                    route = route()
                if route is None:
                    route = Route(404, {"Content-Type": "text/plain"}, b"no such route")
                try:
                    if route.delay:
                        time.sleep(route.delay)
                    self.send_response(route.status)
                    for name, value in route.headers.items():
                        self.send_header(name, value)
                    if not route.stream:
                        self.send_header("Content-Length", str(len(route.body)))
                    self.end_headers()
                    self.wfile.write(route.body)
                    chunk = b"<span>filler</span>" * 3000
                    sent = 0
                    while sent < route.stream:
                        self.wfile.write(chunk)
                        sent += len(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeouts, size caps): that is the point

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if self.tls:
            import ssl

            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
            context.sni_callback = lambda _sock, name, _ctx: self.sni_names.append(name)
            server.socket = context.wrap_socket(server.socket, server_side=True)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


# --- zipped office formats, written part by part as their producers write them ----------------


def _zip_parts(path: Path, parts: dict[str, str], mimetype: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        if mimetype is not None:  # OpenDocument and EPUB: the first entry, stored uncompressed
            archive.writestr(zipfile.ZipInfo("mimetype"), mimetype, compress_type=zipfile.ZIP_STORED)
        for name, body in parts.items():
            archive.writestr(name, body, compress_type=zipfile.ZIP_DEFLATED)
    return path


def make_odt(path: str | Path, title: str, blocks: list[tuple[str, int]], rows: list[list[str]]) -> Path:
    """An OpenDocument text: `blocks` are (text, outline level; 0 = paragraph), then a table."""
    text_ns = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
    body = "".join(f'<text:h text:outline-level="{level}">{escape(t)}</text:h>' if level else
                   f"<text:p>{escape(t)}</text:p>" for t, level in blocks)
    table = "".join("<table:table-row>" + "".join(f"<table:table-cell><text:p>{escape(c)}</text:p></table:table-cell>"
                                                  for c in row) + "</table:table-row>" for row in rows)
    content = (f'<?xml version="1.0" encoding="UTF-8"?><office:document-content '
               f'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="{text_ns}" '
               f'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.3">'
               f'<office:body><office:text>{body}<table:table>{table}</table:table></office:text></office:body>'
               f'</office:document-content>')
    meta = ('<?xml version="1.0" encoding="UTF-8"?><office:document-meta '
            'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
            f'xmlns:dc="http://purl.org/dc/elements/1.1/"><office:meta><dc:title>{escape(title)}</dc:title>'
            '</office:meta></office:document-meta>')
    return _zip_parts(Path(path), {"content.xml": content, "meta.xml": meta,
                                   "META-INF/manifest.xml": "<manifest/>"},
                      mimetype="application/vnd.oasis.opendocument.text")


def make_epub(path: str | Path, title: str, chapters: list[str]) -> Path:
    """An EPUB whose spine lists `chapters` (XHTML bodies) in order — the manifest in reverse, as
    a producer may write it, so reading order must come from the spine."""
    items = "".join(f'<item id="c{i}" href="text/ch{i}.xhtml" media-type="application/xhtml+xml"/>'
                    for i in reversed(range(len(chapters))))
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    opf = ('<?xml version="1.0" encoding="UTF-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
           f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{escape(title)}</dc:title></metadata>'
           f'<manifest>{items}</manifest><spine>{spine}</spine></package>')
    container = ('<?xml version="1.0"?><container version="1.0" '
                 'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
                 '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                 '</rootfiles></container>')
    parts = {"META-INF/container.xml": container, "OEBPS/content.opf": opf}
    for i, body in enumerate(chapters):
        parts[f"OEBPS/text/ch{i}.xhtml"] = ('<?xml version="1.0" encoding="UTF-8"?><html '
                                            'xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title></head>'
                                            f"<body>{body}</body></html>")
    return _zip_parts(Path(path), parts, mimetype="application/epub+zip")


def make_pptx(path: str | Path, slides: list[list[str]]) -> Path:
    """A presentation: each slide's paragraphs, the first being its title."""
    a = "http://schemas.openxmlformats.org/drawingml/2006/main"
    parts = {"[Content_Types].xml": "<Types/>", "ppt/presentation.xml": "<presentation/>"}
    for n, paragraphs in enumerate(slides, 1):
        text = "".join(f"<a:p><a:r><a:t>{escape(p)}</a:t></a:r></a:p>" for p in paragraphs)
        parts[f"ppt/slides/slide{n}.xml"] = (f'<p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/'
                                             f'2006/main" xmlns:a="{a}"><p:cSld><p:spTree><p:sp><p:txBody>'
                                             f"{text}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>")
    return _zip_parts(Path(path), parts)


def make_xlsx(path: str | Path, sheets: dict[str, list[list[str | int]]]) -> Path:
    """A workbook: text cells through the shared-strings table, numbers as values."""
    s = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    r = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    strings: list[str] = []
    parts = {"[Content_Types].xml": "<Types/>"}
    listed, rels = [], []
    for n, (name, rows) in enumerate(sheets.items(), 1):
        xml_rows = []
        for i, row in enumerate(rows, 1):
            cells = []
            for value in row:
                if isinstance(value, int):
                    cells.append(f"<c><v>{value}</v></c>")
                else:
                    strings.append(value)
                    cells.append(f'<c t="s"><v>{len(strings) - 1}</v></c>')
            xml_rows.append(f'<row r="{i}">{"".join(cells)}</row>')
        parts[f"xl/worksheets/sheet{n}.xml"] = f'<worksheet xmlns="{s}"><sheetData>{"".join(xml_rows)}</sheetData></worksheet>'
        listed.append(f'<sheet name="{escape(name)}" sheetId="{n}" r:id="rId{n}"/>')
        rels.append(f'<Relationship Id="rId{n}" Type="{r}/worksheet" Target="worksheets/sheet{n}.xml"/>')
    parts["xl/workbook.xml"] = f'<workbook xmlns="{s}" xmlns:r="{r}"><sheets>{"".join(listed)}</sheets></workbook>'
    parts["xl/_rels/workbook.xml.rels"] = ('<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
                                           f'relationships">{"".join(rels)}</Relationships>')
    parts["xl/sharedStrings.xml"] = f'<sst xmlns="{s}">' + "".join(f"<si><t>{escape(t)}</t></si>" for t in strings) + "</sst>"
    return _zip_parts(Path(path), parts)


def make_rtf(path: str | Path, paragraphs: list[str]) -> Path:
    """Rich Text as Word writes Russian: cp1251 bytes as \\'hh escapes, a dash as \\u8212, a font table."""
    def escaped(text: str) -> str:
        out = []
        for char in text:
            if char == "—":
                out.append("\\u8212?")
            elif ord(char) < 128:
                out.append(char)
            else:
                out.extend(f"\\'{byte:02x}" for byte in char.encode("cp1251"))
        return "".join(out)

    body = "".join(f"\\pard {escaped(p)}\\par\n" for p in paragraphs)
    Path(path).write_bytes(("{\\rtf1\\ansi\\ansicpg1251\\deff0{\\fonttbl{\\f0\\froman Times New Roman;}}\n"
                            f"\\f0\\fs24 {body}}}").encode("ascii"))
    return Path(path)


def page_image(lines: list[str], *, width: int = 1400) -> bytes:
    """A photographed page, as OCR sees one: black Russian text on white at ~300 dpi, PNG bytes."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(FONT_DIR / "DejaVuSans.ttf"), 40)
    image = Image.new("L", (width, 120 + 70 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for n, line in enumerate(lines):
        draw.text((80, 60 + 70 * n), line, font=font, fill=0)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def make_scanned_pdf(path: str | Path, pages: list[list[str]]) -> Path:
    """A scanned PDF: each page one raster image of its lines, no text layer."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    path = Path(path)
    pdf = canvas.Canvas(str(path), pagesize=A4)
    for lines in pages:
        height = 535 * (120 + 70 * len(lines)) / 1400  # the image's own proportions, 535 pt wide
        pdf.drawImage(ImageReader(io.BytesIO(page_image(lines))), 30, 500, width=535, height=height)
        pdf.showPage()
    pdf.save()
    return path
