#!/bin/sh
# Set BX's document: the whole Russian handbook of KGeography, KDE's geography trainer («Руководство пользователя
# KGeography»), from the DocBook source that kgeography-data ships (/usr/share/doc/HTML/ru/kgeography/index.docbook),
# built into one HTML page by xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no
# tables of contents), its <img> tags removed by sed (the handbook shows 16 screenshots and one small icon, and the
# Russian folder holds none), converted to reStructuredText by pandoc (`-t rst`) and written as one standalone HTML5
# page by Docutils (`rst2html5`), where the earlier HTML documents were shipped as they are or written by yelp-build,
# the DocBook XSL stylesheets and pandoc.
# The Lua filter drops the links (their text stays), the inline markup's spans and the pictures, unwraps the
# stylesheets' divs but for the tips and the «Важно» note, which it keeps as admonitions without their headings (pandoc
# writes them as reStructuredText directives), writes code set in bold as code alone (reStructuredText cannot nest
# inline markup, and Docutils would show the backquotes), makes the names of the authors and translators on the title page
# paragraphs rather than headings, and makes the book's title the document's title. Docutils 0.19 writes the page with
# its own HTML5 writer: the title as h1, the chapters as sections with h2 and their sections with h3, the tips and the
# note as <aside> blocks with the captions «Подсказка» and «Важно» (the language is Russian), the definition lists
# of the menus and settings as <dl>, the code as <span class="docutils literal">, and its two style sheets (minimal.css
# and plain.css) embedded in the head. pandoc writes each paragraph on one line (--wrap=none), and Docutils keeps the
# lines of its source, so each paragraph, list item, term and definition is on one line of the page.
# KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the network.
# Reproducibility. Neither pandoc's reStructuredText nor Docutils' page holds a date or an id (no datestamp, no source
# link are asked for): two plain runs gave the same bytes. Docutils reads its settings from the configuration file the
# script writes (DOCUTILSCONFIG), not from /etc/docutils.conf, ~/.docutils or the current folder's; pandoc and Docutils
# run with HOME in the temporary folder. Two runs give the same bytes, also from a copy of the source in another folder
# and with LC_ALL=C.
#   apt-get install -y --no-install-recommends kgeography-data kdoctools5 docbook-xsl docbook-xml xsltproc pandoc \
#     python3-docutils
# Made with Debian 12's kgeography-data 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy),
# kdoctools5 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), pandoc
# 2.17.1.1-2~deb12u1 and python3-docutils 0.19+dfsg-6 (Docutils 0.19, on Python 3.11).
set -eu
RST2HTML5=${RST2HTML5:-rst2html5}
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/doc/HTML/ru/kgeography}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/utf8.xsl" <<'XSL'
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">
  <xsl:import href="/usr/share/xml/docbook/stylesheet/docbook-xsl/html/docbook.xsl"/>
  <xsl:output method="html" encoding="UTF-8" indent="no"/>
</xsl:stylesheet>
XSL
cat > "$TMP/filter.lua" <<'LUA'
local admonitions = {tip = true, note = true, warning = true, important = true, caution = true}
local title = nil
local function unwrap(el) return el.content end
local function drop() return {} end
local function div(el)
  if not admonitions[el.classes[1]] then return el.content end
  local body = {}
  for i, b in ipairs(el.content) do
    if not (i == 1 and b.t == "Header") then table.insert(body, b) end
  end
  return pandoc.Div(body, pandoc.Attr("", {el.classes[1]}))
end
local function bare_code(el)
  if #el.content == 1 and el.content[1].t == "Code" then return el.content[1] end
end
local function header(el)
  if el.classes:includes("author") or el.classes:includes("othercredit") then return pandoc.Para(el.content) end
  if el.level == 1 and title == nil then
    title = el.content
    return {}
  end
  el.attr = pandoc.Attr()
  return el
end
return {{Pandoc = function(doc)
  doc = doc:walk({Span = unwrap, Link = unwrap, Image = drop})
  doc = doc:walk({Strong = bare_code, Emph = bare_code})
  doc = doc:walk({Div = div})
  doc = doc:walk({Header = header})
  doc.meta.title = title
  return doc
end}}
LUA
cat > "$TMP/docutils.conf" <<'CONF'
[general]
language_code: ru
datestamp:
source_link: no
input_encoding: utf-8
output_encoding: utf-8
CONF
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook"
n=$(grep -o '<div class="chapter"' "$TMP/page.html" | wc -l)
[ "$n" -eq 7 ] || { echo "expected 7 chapters, found $n" >&2; exit 1; }
mkdir "$TMP/html" "$TMP/out" "$TMP/home"
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/kgeography-handbook-ru.html"
HOME="$TMP/home" "$PANDOC" -f html -t rst -s --wrap=none --lua-filter="$TMP/filter.lua" \
  -o "$TMP/html/kgeography-handbook-ru.rst" "$TMP/html/kgeography-handbook-ru.html"
cd "$TMP/out"
DOCUTILSCONFIG="$TMP/docutils.conf" HOME="$TMP/home" "$RST2HTML5" --halt=warning \
  ../html/kgeography-handbook-ru.rst kgeography-handbook-ru.html > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/kgeography-handbook-ru.html" "$OUT/kgeography-handbook-ru.html"
test -s "$OUT/kgeography-handbook-ru.html"
