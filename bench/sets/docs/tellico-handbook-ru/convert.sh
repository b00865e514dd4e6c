#!/bin/sh
# Set BW's document: chapter 2 «Использование Tellico» of the Russian handbook of Tellico, KDE's collection manager
# («Руководство пользователя Tellico»), from the DocBook source that tellico-doc ships
# (/usr/share/doc/HTML/ru/tellico/index.docbook, the chapter in fundamentals.docbook), built into one HTML page of that
# chapter by xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no tables of
# contents, rootid=fundamentals, so that the stylesheets read the whole book and write chapter 2 alone), its <img> tags
# removed by sed (the chapter shows eleven screenshots, and the Russian folder holds none), converted to AsciiDoc by
# pandoc (`-t asciidoctor`) and laid out and written as one PDF by Asciidoctor PDF, where the earlier PDFs came from
# pdfTeX, xdvipdfmx, LibreOffice, WeasyPrint, LuaTeX, Chromium, wkhtmltopdf, AbiWord through cairo, MuPDF, HTMLDOC,
# Ghostscript and Apache FOP.
# The Lua filter drops the links (their text stays), the inline markup's spans and the pictures, unwraps the stylesheets'
# divs, writes the tips and the warning as AsciiDoc admonition blocks (pandoc 2.17's AsciiDoc writer has none: each is
# written as a raw block whose body pandoc writes itself), drops the empty line breaks the stylesheets put after each
# table, and makes the chapter's title the document's title and its sections the document's sections. Asciidoctor PDF
# 2.3.4 (on Prawn 2.4.0) lays the document out with its default theme: A4 pages, the title at the top of the first page,
# justified text in Noto Serif (the subset fonts that ruby-asciidoctor-pdf ships, with Cyrillic, embedded as TrueType
# subsets with Unicode maps, so pdftotext reads real Cyrillic), the page number at the foot of each page, the tables
# with their header row repeated on a new page, the admonitions with their captions (given in Russian by attributes)
# beside the text; no word is hyphenated. Asciidoctor's replacements turn the three full stops of the menu items into
# an ellipsis («Новая запись…»).
# KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the network.
# Reproducibility. Asciidoctor PDF writes the creation and modification dates into the PDF's document information, and
# takes them from SOURCE_DATE_EPOCH when it is set; the script sets it to 2026-11-29 00:00:00 UTC. The PDF holds no
# file id. pandoc and Asciidoctor PDF run with HOME in the temporary folder. Two runs give the same bytes, also from a
# copy of the source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends tellico-doc kdoctools5 docbook-xsl docbook-xml xsltproc pandoc \
#     ruby-asciidoctor-pdf
# Made with Debian 12's tellico-doc 3.4.6-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), pandoc
# 2.17.1.1-2~deb12u1 and ruby-asciidoctor-pdf 2.3.4-3 (Asciidoctor PDF 2.3.4 with ruby-asciidoctor 2.0.18-2,
# ruby-prawn 2.4.0+dfsg-1, ruby-ttfunk 1.7.0-1, on ruby3.1 3.1.2).
set -eu
ASCIIDOCTOR_PDF=${ASCIIDOCTOR_PDF:-asciidoctor-pdf}
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/doc/HTML/ru/tellico}
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
local function bare_break(el)
  if #el.content == 1 and el.content[1].t == "LineBreak" then return {} end
end
local function header(el)
  el.attr = pandoc.Attr()
  if el.level == 1 then
    title = el.content
    return {}
  end
  el.level = el.level - 1
  return el
end
return {{Pandoc = function(doc)
  doc = doc:walk({Span = unwrap, Link = unwrap, Image = drop})
  doc = doc:walk({Div = div})
  doc = doc:walk({Para = bare_break, Plain = bare_break})
  doc = doc:walk({Header = header})
  doc.meta.title = title
  doc.meta.lang = "ru"
  return doc
end}}
LUA
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet --stringparam generate.toc '' --stringparam rootid fundamentals \
  -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook"
n=$(grep -o '<div class="chapter"' "$TMP/page.html" | wc -l)
[ "$n" -eq 1 ] || { echo "expected 1 chapter, found $n" >&2; exit 1; }
mkdir "$TMP/html" "$TMP/out" "$TMP/home"
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/tellico-handbook-ru.html"
HOME="$TMP/home" "$PANDOC" -f html -t asciidoctor -s --wrap=none --lua-filter="$TMP/filter.lua" \
  -o "$TMP/html/tellico-handbook-ru.adoc" "$TMP/html/tellico-handbook-ru.html"
if grep -q '^ +$' "$TMP/html/tellico-handbook-ru.adoc"; then echo "a bare line break left" >&2; exit 1; fi
cd "$TMP/out"
SOURCE_DATE_EPOCH=1795910400 HOME="$TMP/home" "$ASCIIDOCTOR_PDF" -a lang=ru -a note-caption=Примечание \
  -a tip-caption=Подсказка -a warning-caption=Предупреждение -a important-caption=Важно -a caution-caption=Внимание \
  -o tellico-handbook-ru.pdf ../html/tellico-handbook-ru.adoc > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
if [ -s "$TMP/log" ]; then cat "$TMP/log" >&2; exit 1; fi
cp "$TMP/out/tellico-handbook-ru.pdf" "$OUT/tellico-handbook-ru.pdf"
test -s "$OUT/tellico-handbook-ru.pdf"
