"""PowerPoint (`nodes.ingestion.formats.pptx`): one section per slide, «Слайд N: its first line»,
slides in number order; claimed as a zip holding ppt/presentation.xml."""

from __future__ import annotations

import zipfile
from pathlib import Path

from nodes.ingestion.formats import Upload, detect
from nodes.ingestion.formats.pptx import FORMAT, numbered

A = "http://schemas.openxmlformats.org/drawingml/2006/main"
P = "http://schemas.openxmlformats.org/presentationml/2006/main"


def _slide(*shapes: list[str]) -> str:
    bodies = "".join("<p:sp><p:txBody>" + "".join(f"<a:p>{runs}</a:p>" for runs in shape) + "</p:txBody></p:sp>"
                     for shape in shapes)
    return f'<p:sld xmlns:p="{P}" xmlns:a="{A}"><p:cSld><p:spTree>{bodies}</p:spTree></p:cSld></p:sld>'


def _pptx(path: Path, slides: dict[int, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("ppt/presentation.xml", "<p:presentation/>")
        for number, body in slides.items():
            archive.writestr(f"ppt/slides/slide{number}.xml", body)
        archive.writestr("ppt/slides/_rels/slide1.xml.rels", "<Relationships/>")
        archive.writestr("ppt/notesSlides/notesSlide1.xml", _slide(["<a:r><a:t>Заметка докладчика</a:t></a:r>"]))
    return path


def test_numbered_sorts_by_number_not_by_name() -> None:
    names = ["ppt/slides/slide10.xml", "ppt/slides/slide2.xml", "ppt/slides/slide1.xml",
             "ppt/slides/_rels/slide1.xml.rels", "ppt/slideLayouts/slideLayout1.xml"]
    assert numbered(names, r"ppt/slides/slide(\d+)\.xml") == [
        "ppt/slides/slide1.xml", "ppt/slides/slide2.xml", "ppt/slides/slide10.xml"]


def test_slides_in_number_order_each_a_section_titled_by_its_first_line(tmp_path: Path) -> None:
    slides = {n: _slide([f"<a:r><a:t>Тема {n}</a:t></a:r>"], [f"<a:r><a:t>Текст </a:t></a:r><a:r><a:t>слайда {n}"
                                                             "</a:t></a:r>"]) for n in (1, 2, 10)}
    slides[3] = _slide(["<a:r><a:t> </a:t></a:r>"])  # a picture-only slide: no section
    doc = FORMAT.parse(Upload.open(_pptx(tmp_path / "доклад.pptx", slides), "доклад.pptx", None))
    assert doc.text.split("\n\n") == ["Слайд 1: Тема 1", "Текст слайда 1", "Слайд 2: Тема 2", "Текст слайда 2",
                                      "Слайд 4: Тема 10", "Текст слайда 10"]  # N counts every slide, in order
    assert [s.path for s in doc.sections] == [["Слайд 1: Тема 1"], ["Слайд 2: Тема 2"], ["Слайд 4: Тема 10"]]
    assert "Заметка докладчика" not in doc.text
    assert doc.meta == {"slides": 4} and doc.title == "доклад" and doc.source_type == "pptx"


def test_pptx_is_claimed_by_its_presentation_part(tmp_path: Path) -> None:
    path = _pptx(tmp_path / "slides.bin", {1: _slide(["<a:r><a:t>x</a:t></a:r>"])})
    assert detect(Upload.open(path, "slides.bin", None)) is FORMAT
    assert FORMAT.extensions == frozenset({".pptx"}) and FORMAT.signatures == frozenset({"zip"})


def test_a_line_break_inside_a_paragraph_parts_its_words(tmp_path: Path) -> None:
    slides = {1: _slide(["<a:r><a:t>Тема</a:t></a:r>"], ["<a:r><a:t>Первая строка</a:t></a:r><a:br/>"
                                                        "<a:r><a:t>вторая строка</a:t></a:r>"])}
    doc = FORMAT.parse(Upload.open(_pptx(tmp_path / "br.pptx", slides), "br.pptx", None))
    assert doc.text.split("\n\n") == ["Слайд 1: Тема", "Первая строка вторая строка"]
