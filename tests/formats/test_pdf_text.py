"""A PDF's text layer (`nodes.ingestion.formats.pdf_text`): a LaTeX-made page keeps its word spaces,
PDFium's hyphen marks, soft hyphens and ligatures are normalised, and a page that fails the check
is read again by pypdf. The two PDFs are real pages (tests/fixtures/README.md)."""

from __future__ import annotations

from grove.core.settings import get_settings
from pathlib import Path

import pypdfium2 as pdfium

from nodes.ingestion.formats import pdf_layout, pdf_text
from nodes.ingestion.formats.pdf import parse_pdf_source
from nodes.ingestion.ocr import Ocr
from nodes.ingestion.parse_files import parse_file

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LATEX_PAGE = FIXTURES / "latex-page-ru.pdf"
MATH_PAGE = FIXTURES / "mongolian-babel-p8.pdf"


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_latex_made_page_keeps_every_word_space() -> None:
    doc = parse_file(str(LATEX_PAGE), "stead3.pdf", None, get_settings())
    text = _flat(doc.text)
    assert pdf_text.glued_runs(doc.text) == []
    assert text.startswith("Как запустить игру Чтобы игра запускалась на STEAD3, главный файл игры называют main3.lua")
    for phrase in ("поэтому знание Lua может быть полезным для любого автора",  # «мо-/жет» joined
                   "Имя объекта задают строкой вида nam = ’ящик’, описание сцены — строкой dsc.",
                   "переменные, объявленные внутри объектов, попадают в файл сохранения",
                   "Таймер включают вызовом timer:set(1000), где число задаёт интервал в миллисекундах",
                   "настройки shell-окружения и профили конфигурации для office workstations."):
        assert phrase in text
    assert doc.meta["hyphens_joined"] == 8 and doc.meta["pages_read_by_pypdf"] == 0
    # as many words as the source file holds in its document body
    source = LATEX_PAGE.with_suffix(".tex").read_text(encoding="utf-8")
    body = source.split("\\begin{document}")[1].split("\\end{document}")[0]
    body = body.replace("{\\large ", "").replace("\\par}\\medskip", "").replace("---", "—")
    assert len(text.split()) == len(body.split())


def test_pdfium_hyphen_marks_soft_hyphens_and_ligatures_are_normalised() -> None:
    assert pdf_text.normalise("для хра\ufffeнения\r\nфайлов") == "для хра-\nнения\nфайлов"
    assert pdf_text.normalise("texmf\x02 dist") == "texmf-\ndist"  # the bounded-text mark
    assert pdf_text.normalise("по\u00adдвал и сло\u00ad\nво") == "подвал и сло\u00ad\nво"  # the break: pdf_layout's
    assert pdf_text.normalise("\ufb01le \ufb02ow \ufb00 \ufb03x \ufb04e \ufb05 \ufb06") == "file flow ff ffix ffle st st"
    untouched = "№ 5, x², ＡＢ, ½ — «ёлка»"
    assert pdf_text.normalise(untouched) == untouched  # NFKC only for the ligatures
    # the mark becomes a line-end hyphen, and the document decides as for any extractor
    pages = [pdf_text.normalise(page) for page in ("Дерево texmf\ufffedist и хра\ufffeнения.", "Снова texmf-dist.")]
    words = pdf_layout.vocabulary(pages)
    assert pdf_layout.join_hyphenation(pages[0], words).text == "Дерево texmf-dist и хранения."


def test_a_page_that_fails_the_check_is_read_again_by_pypdf() -> None:
    pdf = pdfium.PdfDocument(MATH_PAGE.read_bytes())
    try:
        pdfium_text = pdf_text.read_text(pdf, 0)
    finally:
        pdf.close()
    assert "∗spanishligs\x04" in pdfium_text and not pdf_text.check(pdfium_text).passed
    doc = parse_pdf_source(MATH_PAGE, "mongolian.pdf", Ocr())
    assert doc.meta["pages_read_by_pypdf"] == 1
    assert "\x04" not in doc.text
    assert "∗spanishligs⟩" in doc.text and "/spanishligs⟩" in doc.text and "∗frenchpunct⟩" in doc.text
    assert pdf_text.check(doc.text).passed


def test_the_fallback_text_wins_only_when_cleaner_and_no_shorter() -> None:
    primary = pdf_text.check("Путь задают кривыми \x04 и \x04 прямыми.")
    assert not primary.passed
    assert pdf_text.check("Путь задают кривыми ⟩ и ⟩ прямыми.").better_than(primary)
    assert not pdf_text.check("Путьзадают кривыми ⟩ и ⟩ прямыми.").better_than(primary)  # a word glued
    glued = pdf_text.check("Путь " + "задаюткривымиипрямымиотрезками" + " на плоскости.")
    assert glued.glued == 1 and not glued.passed
    # glued words cost the reader more than a stray glyph
    assert pdf_text.check("Путь задают \x04 кривыми и прямыми отрезками на плоскости.").better_than(glued)
    assert pdf_text.check("(cid:12) и \ufffd").not_text == 2
    # identifiers are one word each: a TeX control sequence, a camelCase name
    assert pdf_text.check("Примитив \\pdfsuppresswarningpagegroup и ScriptScriptPercentScaleDown.").passed
    assert pdf_text.check("Любой текст.").better_than(pdf_text.check(""))  # a page PDFium read nothing on
