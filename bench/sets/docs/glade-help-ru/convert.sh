#!/bin/sh
# Set BY's document: the whole Russian help of Glade, GNOME's user interface designer («Руководство по редактору
# интерфейса Glade»), from the DocBook source that glade ships (/usr/share/help/ru/glade/index.docbook, with legal.xml
# by XInclude), built into one HTML page by xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl, output
# in UTF-8, no table of contents), its <img> tags removed by sed (the screenshots), converted to AsciiDoc by pandoc
# (`-t asciidoctor`) and written as one standalone HTML5 page by Asciidoctor (`asciidoctor -b html5`), where the
# earlier HTML documents were shipped as they are or written by yelp-build, the DocBook XSL stylesheets, pandoc and
# Docutils.
# The Lua filter drops the links (their text stays), the inline markup's spans and the pictures, unwraps the
# stylesheets' divs but for the notes and tips, which it writes as AsciiDoc admonition blocks without their headings
# (pandoc 2.17's AsciiDoc writer has none, so each is a raw block whose body pandoc writes itself), makes the names of
# the authors and translators on the title page paragraphs rather than headings, makes the article's title the
# document's title and its sections the document's sections. Asciidoctor 2.0.18 writes the page with its HTML5
# converter and its default style sheet embedded in the head (no web fonts: `-a webfonts!`), the title as h1, the
# sections as <div class="sect1"> with h2 and their subsections with h3, each paragraph as <div class="paragraph"><p>,
# the admonitions as tables with their captions in Russian («Примечание», «Подсказка»), and the footer «Последнее
# обновление» with the document's date. pandoc writes each paragraph on one line (--wrap=none), and Asciidoctor keeps
# the lines of its source, so each paragraph and list item is on one line of the page. pandoc indents the descriptions
# of the definition lists by two spaces, with a «+» between the paragraphs of one description, and writes the line break
# after the screenshot's caption as a line « +»; Asciidoctor would read an indented paragraph after a «+» as a literal
# block and show the « +» as text, so sed drops that line and the indents (the descriptions start on the line after
# their term, which AsciiDoc allows), and the script stops if an indented line is left.
# The DocBook 4.1.2 DTD resolves through the system's XML catalog; nothing is fetched from the network.
# Reproducibility. The footer's date is the source file's modification time unless SOURCE_DATE_EPOCH is set; the
# script sets it to 2026-11-29 00:00:00 UTC, and the page holds no other date or id. pandoc and Asciidoctor run with
# HOME in the temporary folder. Two runs give the same bytes, also from a copy of the source in another folder and with
# LC_ALL=C.
#   apt-get install -y --no-install-recommends glade docbook-xsl docbook-xml xsltproc pandoc asciidoctor
# Made with Debian 12's glade 3.40.0-3+b1 (its .deb unpacked under /tmp; SRC may name such a copy), docbook-xsl
# 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), pandoc 2.17.1.1-2~deb12u1 and asciidoctor
# 2.0.18-2.
set -eu
ASCIIDOCTOR=${ASCIIDOCTOR:-asciidoctor}
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/help/ru/glade}
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
local admonitions = {tip = "TIP", note = "NOTE", warning = "WARNING", important = "IMPORTANT", caution = "CAUTION"}
local title = nil
local function unwrap(el) return el.content end
local function drop() return {} end
local function div(el)
  local kind = admonitions[el.classes[1]]
  if not kind then return el.content end
  local body = {}
  for i, b in ipairs(el.content) do
    if not (i == 1 and b.t == "Header") then table.insert(body, b) end
  end
  local text = pandoc.write(pandoc.Pandoc(body), "asciidoctor", {wrap_text = "none"})
  return pandoc.RawBlock("asciidoc", "[" .. kind .. "]\n====\n" .. text:gsub("%s+$", "") .. "\n====\n\n")
end
local function header(el)
  if el.classes:includes("author") or el.classes:includes("othercredit") then return pandoc.Para(el.content) end
  el.attr = pandoc.Attr()
  if title == nil then
    title = el.content
    return {}
  end
  el.level = el.level - 1
  return el
end
return {{Pandoc = function(doc)
  doc = doc:walk({Span = unwrap, Link = unwrap, Image = drop})
  doc = doc:walk({Div = div})
  doc = doc:walk({Header = header})
  doc.meta.title = title
  doc.meta.lang = "ru"
  return doc
end}}
LUA
xsltproc --nonet --xinclude --stringparam generate.toc '' -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook"
n=$(grep -o '<div class="sect1"' "$TMP/page.html" | wc -l)
[ "$n" -eq 5 ] || { echo "expected 5 sections, found $n" >&2; exit 1; }
mkdir "$TMP/html" "$TMP/out" "$TMP/home"
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/glade-help-ru.html"
HOME="$TMP/home" "$PANDOC" -f html -t asciidoctor -s --wrap=none --lua-filter="$TMP/filter.lua" \
  -o "$TMP/html/pandoc.adoc" "$TMP/html/glade-help-ru.html"
sed -e '/^ +$/d' -e 's/^  //' "$TMP/html/pandoc.adoc" > "$TMP/html/glade-help-ru.adoc"
if grep -q '^ ' "$TMP/html/glade-help-ru.adoc"; then echo "an indented line left" >&2; exit 1; fi
cd "$TMP/out"
SOURCE_DATE_EPOCH=1795910400 HOME="$TMP/home" "$ASCIIDOCTOR" -b html5 -a lang=ru -a webfonts! \
  -a note-caption=Примечание -a tip-caption=Подсказка -a warning-caption=Предупреждение -a important-caption=Важно \
  -a caution-caption=Внимание -a last-update-label="Последнее обновление" \
  -o glade-help-ru.html ../html/glade-help-ru.adoc > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
if [ -s "$TMP/log" ]; then cat "$TMP/log" >&2; exit 1; fi
cp "$TMP/out/glade-help-ru.html" "$OUT/glade-help-ru.html"
test -s "$OUT/glade-help-ru.html"
