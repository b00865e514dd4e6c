"""The chunker kept inside pages and sections: `plan_regions` cuts a document into regions no
chunk crosses (a page, a section, the part of a section on one page; short neighbouring sections
share one, a heading stays with its text), and `chunk_regions` chunks each, every chunk carrying
its page and heading path."""

from __future__ import annotations
from collections.abc import Sequence
from dataclasses import dataclass
from .spans import tight_bounds

from .chunker import MAX_BARE_HEADING_CHARS, Chunk, build_chunks, chunk_bounds, resolve_sizes


@dataclass(frozen=True, slots=True)
class Region:
    """A stretch of the document no chunk crosses: a page, a section, or the part of a
    section on one page. ``page`` is 1-based (``None`` for unpaged text); ``section`` is
    the heading path, outermost first."""

    start: int
    end: int
    page: int | None = None
    section: tuple[str, ...] = ()
    opens_section: bool = False


def _common_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _cut(text: str, pages: Sequence[tuple[int, int]] | None,
         sections: Sequence[tuple[int, int, tuple[str, ...]]]) -> list[Region]:
    """Pages split further at every section boundary; whitespace-only pieces dropped."""
    spans = list(pages) if pages is not None else [(0, len(text))]
    ordered = sorted(sections)
    regions: list[Region] = []
    for number, (page_start, page_end) in enumerate(spans, start=1):
        cuts = {page_start, page_end}
        for start, end, _ in ordered:
            for point in (start, end):
                if page_start < point < page_end:
                    cuts.add(point)
        points = sorted(cuts)
        for start, end in zip(points, points[1:]):
            tight = tight_bounds(text, start, end)
            if tight is None:
                continue
            covering = next(((s, path) for s, e, path in ordered if s <= start < e), None)
            path = covering[1] if covering else ()
            opens = covering is not None and start == covering[0] and bool(path)
            regions.append(Region(start, end, number if pages is not None else None, path, opens))
    return regions


def _is_bare_heading(text: str, region: Region) -> bool:
    """Only the section's heading line: nothing to retrieve on its own."""
    tight = tight_bounds(text, region.start, region.end)
    if tight is None or not region.opens_section:
        return False
    return tight[1] - tight[0] <= MAX_BARE_HEADING_CHARS and "\n" not in text[tight[0] : tight[1]]


def _size(text: str, region: Region) -> int:
    tight = tight_bounds(text, region.start, region.end)
    return 0 if tight is None else tight[1] - tight[0]


def plan_regions(
    text: str,
    *,
    pages: Sequence[tuple[int, int]] | None = None,
    sections: Sequence[tuple[int, int, tuple[str, ...]]] = (),
    merge_chars: int = 0,
    target_chars: int = 1000,
) -> list[Region]:
    """The regions :func:`chunk_regions` packs separately: pages cut at section boundaries.

    A bare heading (its section's first line and nothing else on that page) joins
    the next region on its page and takes that region's deeper path, or, at the
    bottom of a page, the region before it. Then neighbours on one page that are
    both shorter than ``merge_chars`` are merged while the result stays within
    ``target_chars``; a merged region's path is what its parts share.
    """
    regions = _cut(text, pages, sections)
    joined: list[Region] = []
    pending: Region | None = None  # a bare heading waiting for its content
    for region in regions:
        if pending is not None and pending.page == region.page:
            region = Region(pending.start, region.end, region.page, region.section, True)
            pending = None
        elif pending is not None:
            joined = _append_to_previous(joined, pending)
            pending = None
        if _is_bare_heading(text, region):
            pending = region
            continue
        joined.append(region)
    if pending is not None:
        joined = _append_to_previous(joined, pending)
    if merge_chars <= 0:
        return joined
    merged: list[Region] = []
    for region in joined:
        last = merged[-1] if merged else None
        if (
            last is not None
            and last.page == region.page
            and _size(text, region) < merge_chars
            and _size(text, last) < max(merge_chars, 1)
            and region.end - last.start <= target_chars
        ):
            merged[-1] = Region(last.start, region.end, last.page,
                                _common_prefix(last.section, region.section), last.opens_section)
            continue
        merged.append(region)
    return merged


def _append_to_previous(regions: list[Region], heading: Region) -> list[Region]:
    """A bare heading with nothing after it on its page joins the region before it (same page)."""
    if regions and regions[-1].page == heading.page:
        last = regions[-1]
        regions[-1] = Region(last.start, heading.end, last.page,
                             _common_prefix(last.section, heading.section), last.opens_section)
    else:
        regions.append(heading)
    return regions


def chunk_regions(
    text: str,
    regions: Sequence[Region],
    *,
    target_chars: int = 1000,
    overlap_chars: int = 200,
    max_chars: int | None = None,
) -> list[Chunk]:
    """Chunk each region on its own (as :func:`chunk_pages` does pages): no chunk crosses a
    region, the first chunk of a region has no overlap, and every chunk carries its
    region's page and heading path. Offsets refer to ``text``."""
    target_chars, overlap_chars, max_chars = resolve_sizes(target_chars, overlap_chars, max_chars)
    chunks: list[Chunk] = []
    for region in regions:
        piece = text[region.start : region.end]
        if tight_bounds(piece, 0, len(piece)) is None:
            continue
        bounds = chunk_bounds(piece, target_chars, overlap_chars, max_chars, region.opens_section)
        chunks.extend(build_chunks(piece, bounds, region.start, len(chunks), region.page, region.section))
    return chunks
