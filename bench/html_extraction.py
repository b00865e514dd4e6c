"""HTML extraction: trafilatura's settings against the structure-aware pass of `nodes.ingestion.html_text`.

Run: .venv/bin/python -m bench.html_extraction

Text recall against the page: the share of the page's visible sentences (an independent lxml walk
of ``<body>``, see `bench.extraction_loss`) found in the extracted text, whitespace, soft hyphens
and case normalised. "content" leaves DocBook's ``navheader`` / ``navfooter`` navigation and the
page's own landmarks around its content (``<nav>``, ``<footer>``, ``role="navigation"`` /
``"contentinfo"``) out of the reference, so it is the share of the *content* kept; "nav kept" counts
the sentences around the content that leaked into the text (lower is better).

Corpora: the 25 GIMP manual pages of `bench/sets/gimp_html_ru.json` (document list only) and the
Russian Debian FAQ chapters (`/usr/share/doc/debian/FAQ/ru`, package debian-faq-ru), both DocBook
HTML with inline markup (menus, keys, commands, file names); the 30 GNOME Terminal help pages of
set S (`bench/sets/docs/gnome-terminal-help-ru`, yelp's HTML through pandoc), whose short pages
carry a licence footer longer than themselves. A corpus not installed is skipped.

Also counted on the GIMP pages: menu paths that lost a name («→ →», «→ ;», «→ ,» — trafilatura
drops ``<span class="guimenu">``), and sections (h1–h6) found.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.extraction_loss import gimp_documents, html_reference, normalise, sentences  # noqa: E402

FAQ_DIR = Path("/usr/share/doc/debian/FAQ/ru")
TERMINAL_DIR = Path(__file__).resolve().parent / "sets" / "docs" / "gnome-terminal-help-ru"
_BROKEN_MENU = re.compile(r"→\s*(?:→|[;,.:]|$)", re.M)
_MARKDOWN = re.compile(r"[*`_#|]+")


def _trafilatura(**options: object) -> Callable[[str], str]:
    import trafilatura

    markdown = options.get("output_format") == "markdown"
    formatted = bool(options.get("include_formatting"))

    def run(html: str) -> str:
        if markdown:
            text = trafilatura.extract(html, include_comments=False, include_images=False,
                                       include_links=False, **options) or ""
            return _MARKDOWN.sub(" ", text)  # markup is not text: **Ctrl** → Ctrl
        document = trafilatura.bare_extraction(html, with_metadata=True, include_comments=False,
                                               include_images=False, include_links=False, **options)
        if document is None:
            return ""
        data = document if isinstance(document, dict) else document.as_dict()
        text = data.get("text") or ""
        return _MARKDOWN.sub(" ", text) if formatted else text

    return run


def _ours(html: str) -> str:
    from nodes.ingestion.html_text import extract

    return extract(html).text


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "trafilatura defaults (before)": _trafilatura(include_tables=True),
    "trafilatura favor_recall": _trafilatura(include_tables=True, favor_recall=True),
    "trafilatura favor_precision": _trafilatura(include_tables=True, favor_precision=True),
    "trafilatura include_formatting": _trafilatura(include_tables=True, include_formatting=True),
    "trafilatura markdown + recall": _trafilatura(include_tables=True, include_formatting=True,
                                                  favor_recall=True, output_format="markdown"),
    "structure-aware (nodes.ingestion.html_text)": _ours,
}


def recall(paths: list[Path], extract: Callable[[str], str]) -> tuple[float, float, int, int, int]:
    """(recall of all visible sentences, of content sentences, nav sentences kept, broken menus, chars)."""
    from nodes.ingestion.formats.text import decode_body

    hit_all = total_all = hit_content = total_content = nav_kept = broken = chars = 0
    for path in paths:
        markup, _ = decode_body(path.read_bytes(), None, html=True)
        text = normalise(extract(markup))
        raw = extract(markup)
        chars += len(raw)
        broken += len(_BROKEN_MENU.findall(raw))
        every = sentences(html_reference(path, content_only=False))
        content_blocks = html_reference(path, content_only=True)
        content = set(sentences(content_blocks))
        content_text = normalise(" \n ".join(content_blocks))
        for sentence in every:
            found = sentence in text
            total_all += 1
            hit_all += found
            if sentence in content:
                total_content += 1
                hit_content += found
            elif sentence not in content_text:  # a link label quoted in the content is content
                nav_kept += found
    return hit_all / total_all, hit_content / total_content, nav_kept, broken, chars


def main() -> None:
    corpora = {"GIMP (25 pages)": gimp_documents(),
               "Debian FAQ ru": sorted(p for p in FAQ_DIR.glob("*.ru.html") if p.name != "index.ru.html"),
               "GNOME Terminal help (set S, 30 pages)": sorted(TERMINAL_DIR.glob("*.html"))}
    for name, paths in corpora.items():
        print(f"\n{name}")
        if not paths:
            print("not installed: skipped")
            continue
        print(f"{'extractor':36} {'all':>6} {'content':>8} {'nav kept':>8} {'broken →':>8} {'chars':>8}")
        for label, extract in EXTRACTORS.items():
            every, content, nav, broken, chars = recall(paths, extract)
            print(f"{label:36} {every:6.3f} {content:8.3f} {nav:8d} {broken:8d} {chars:8d}")


if __name__ == "__main__":
    main()
