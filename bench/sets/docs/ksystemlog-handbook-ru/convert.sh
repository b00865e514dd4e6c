#!/bin/sh
# Set CF's document: the whole Russian handbook of KSystemLog, KDE's system log viewer («Руководство пользователя
# KSystemLog»: what it is and what it can do, the logs it reads, starting it, sorting and filtering the lines, the
# colours, hiding the process id, sending lines by mail, stopping and resuming the tracking, and the tabs), from the
# DocBook source that ksystemlog ships (/usr/share/doc/HTML/ru/ksystemlog/index.docbook), written as one Rich Text file
# by latex2rtf from LaTeX that pandoc made of it, where the earlier RTF files were written by pandoc, LibreOffice
# Writer, calibre and AbiWord. xsltproc builds the DocBook into one HTML page with the standard DocBook XSL stylesheets
# (html/docbook.xsl, output in UTF-8, no table of contents; KDE's DTD and entities through the XML catalog of
# kdoctools5, nothing fetched from the network), as set AX's script; sed removes the <img> tags (the three screenshots
# are not shipped in the Russian folder). pandoc writes the page as LaTeX (-f html -t latex --top-level-division=section,
# a template of the script's own) with a Lua filter that keeps the links' and spans' text, writes the e-mail addresses
# as plain text, drops the pictures and the rule under the title page, unwraps the stylesheets' divs, makes the names
# of the author and the translator paragraphs rather than headings, takes the handbook's title as the document's title
# and marks the other headings unnumbered. The template is a plain article in Russian (T2A, utf8, babel russian, an
# empty \tightlist) whose \maketitle writes the title with an empty date: the two chapters are \section*, their
# sections \subsection*, \subsubsection* and \paragraph*. latex2rtf 2.3.18, the converter of LaTeX into RTF, writes the
# file: its own style sheet (Normal, heading 1–6, Title, author …), each paragraph, heading and list item a \pard …
# \par paragraph, the list items with «•», every Cyrillic letter and typographic sign as a \uN escape with «?» as its
# fallback, and an \info group with the title «Original file was ksystemlog-handbook-ru.tex» and a comment naming
# latex2rtf and the time of the run. The script checks that the two chapters are written.
# Reproducibility. The only time in the file is the run's, in the \info group's comment: latex2rtf runs under faketime
# with the wall clock stopped at 2026-11-29 00:00:00 UTC (an absolute time, without «@»). pandoc and latex2rtf run with
# HOME in the temporary folder. Two runs give the same bytes, also from a copy of the source in another folder and with
# LC_ALL=C.
#   apt-get install -y --no-install-recommends ksystemlog kdoctools5 docbook-xsl docbook-xml xsltproc pandoc latex2rtf \
#     faketime
# Made with Debian 12's ksystemlog 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), pandoc
# 2.17.1.1-2~deb12u1, latex2rtf 2.3.18a-3 and faketime / libfaketime 0.9.10-2.1.
set -eu
PANDOC=${PANDOC:-pandoc}
LATEX2RTF=${LATEX2RTF:-latex2rtf}
SRC=${SRC:-/usr/share/doc/HTML/ru/ksystemlog}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/html" "$TMP/tex" "$TMP/home"
cat > "$TMP/utf8.xsl" <<'XSL'
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">
  <xsl:import href="/usr/share/xml/docbook/stylesheet/docbook-xsl/html/docbook.xsl"/>
  <xsl:output method="html" encoding="UTF-8" indent="no"/>
</xsl:stylesheet>
XSL
cat > "$TMP/filter.lua" <<'LUA'
local title = nil
local function unwrap(el) return el.content end
local function drop() return {} end
local function header(el)
  if el.classes:includes("author") or el.classes:includes("othercredit") then return pandoc.Para(el.content) end
  if title == nil then
    title = el.content
    return {}
  end
  el.attr = pandoc.Attr("", {"unnumbered"})
  return el
end
return {{Pandoc = function(doc)
  doc = doc:walk({Span = unwrap, Link = unwrap, Image = drop, HorizontalRule = drop,
                  Code = function(el) return pandoc.Str(el.text) end})
  doc = doc:walk({Div = unwrap})
  doc = doc:walk({Header = header})
  doc.meta.title = title
  doc.meta.lang = nil
  return doc
end}}
LUA
cat > "$TMP/template.tex" <<'TEX'
\documentclass{article}
\usepackage[T2A]{fontenc}
\usepackage[utf8]{inputenc}
\usepackage[russian]{babel}
\providecommand{\tightlist}{}
\title{$title$}
\date{ }
\begin{document}
\maketitle
$body$
\end{document}
TEX
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook" \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
n=$(grep -o '<div class="chapter"' "$TMP/page.html" | wc -l)
[ "$n" -eq 2 ] || { echo "expected 2 chapters, found $n" >&2; exit 1; }
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/ksystemlog-handbook-ru.html"
HOME="$TMP/home" "$PANDOC" -f html -t latex --top-level-division=section --template="$TMP/template.tex" \
  --lua-filter="$TMP/filter.lua" -o "$TMP/tex/ksystemlog-handbook-ru.tex" "$TMP/html/ksystemlog-handbook-ru.html"
n=$(grep -c '^\\section\*' "$TMP/tex/ksystemlog-handbook-ru.tex")
[ "$n" -eq 2 ] || { echo "expected 2 sections, found $n" >&2; exit 1; }
cd "$TMP/tex"
HOME="$TMP/home" TZ=UTC faketime -f "2026-11-29 00:00:00" \
  "$LATEX2RTF" -o ksystemlog-handbook-ru.rtf ksystemlog-handbook-ru.tex > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
cp "$TMP/tex/ksystemlog-handbook-ru.rtf" "$OUT/ksystemlog-handbook-ru.rtf"
test -s "$OUT/ksystemlog-handbook-ru.rtf"
