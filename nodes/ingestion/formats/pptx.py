"""PowerPoint (PPTX): one section per slide («Слайд N: its title»), its paragraphs below."""

from __future__ import annotations

import re
import zipfile

from nodes.ingestion.formats.base import Blocks
from nodes.ingestion.formats.zipped import NS, Parsed, has_parts, text_of, xml, zip_format


def numbered(names: list[str], pattern: str) -> list[str]:
    """The parts matching `pattern` (one group: a number), in number order, not name order."""
    found = [(int(m.group(1)), n) for n in names if (m := re.fullmatch(pattern, n))]
    return [n for _, n in sorted(found)]


def read(archive: zipfile.ZipFile) -> Parsed:
    slides = numbered(archive.namelist(), r"ppt/slides/slide(\d+)\.xml")
    blocks: Blocks = []
    for number, part in enumerate(slides, 1):
        root = xml(archive, part)
        paragraphs = [p for p in (text_of(p) for p in root.iter(f"{{{NS['a']}}}p")) if p]
        if not paragraphs:
            continue
        blocks.append((f"Слайд {number}: {paragraphs[0]}", 1))
        blocks += [(p, 0) for p in paragraphs[1:]]
    return Parsed("pptx", blocks, meta={"slides": len(slides)})


FORMAT = zip_format(read, name="pptx", label="PPTX", accepts=has_parts("ppt/presentation.xml"), order=50)
