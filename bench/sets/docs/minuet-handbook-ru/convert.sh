#!/bin/sh
# Set CH's document: the whole Russian handbook of Minuet, KDE's music education program («Руководство пользователя
# Minuet»: what it is for, starting it, its three parts (the navigation menu, the keyboard view and the exercise view)
# and the buttons of an exercise, and writing new exercises in JSON specification files with their categories, options,
# root ranges, play modes, note sequences and folders), from the DocBook source that minuet-data ships
# (/usr/share/doc/HTML/ru/minuet/index.docbook), written as one HTML page by cmark, the reference converter of
# CommonMark, from the CommonMark that pandoc made of it, where the earlier HTML pages were written by the DocBook XSL
# stylesheets, yelp-build, pandoc, Docutils and Asciidoctor. xsltproc builds the DocBook into one HTML page with the
# standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no table of contents; KDE's DTD and entities
# through the XML catalog of kdoctools5, nothing fetched from the network), as set AX's script. pandoc reads the page
# and writes it as CommonMark (-f html -t commonmark, no line wrapping) with a Lua filter that keeps the links' and
# spans' text, drops the two pictures (not shipped) and the rule under the title page, unwraps the stylesheets' divs,
# makes the names of the author and the translator paragraphs rather than headings and writes each term of a variable
# list as a bold paragraph followed by its description's paragraphs (CommonMark has no definition lists). cmark 0.30.2
# converts the CommonMark into HTML (its defaults, no raw HTML in the input): the chapters as <h1>, their sections as
# <h2>, the paragraphs as <p>, the terms in <strong>, the parameters in <em><code>, the example as a <pre><code
# class="language-programlisting">
# block. The script wraps cmark's fragment in a page of its own (the doctype, <html lang="ru">, a UTF-8 <meta> and the
# title «Руководство пользователя Minuet») and checks that the four chapters are written.
# Reproducibility. Neither pandoc's CommonMark nor cmark's HTML holds a date or an id: pandoc and cmark run with HOME in
# the temporary folder. Two runs give the same bytes, also from a copy of the source in another folder and with
# LC_ALL=C.
#   apt-get install -y --no-install-recommends minuet-data kdoctools5 docbook-xsl docbook-xml xsltproc pandoc cmark
# Made with Debian 12's minuet-data 22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), pandoc
# 2.17.1.1-2~deb12u1 and cmark 0.30.2-6.
set -eu
PANDOC=${PANDOC:-pandoc}
CMARK=${CMARK:-cmark}
SRC=${SRC:-/usr/share/doc/HTML/ru/minuet}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/home"
cat > "$TMP/utf8.xsl" <<'XSL'
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">
  <xsl:import href="/usr/share/xml/docbook/stylesheet/docbook-xsl/html/docbook.xsl"/>
  <xsl:output method="html" encoding="UTF-8" indent="no"/>
</xsl:stylesheet>
XSL
cat > "$TMP/filter.lua" <<'LUA'
local function unwrap(el) return el.content end
local function drop() return {} end
local function header(el)
  if el.classes:includes("author") or el.classes:includes("othercredit") then return pandoc.Para(el.content) end
  return el
end
local function deflist(el)
  local out = {}
  for _, item in ipairs(el.content) do
    table.insert(out, pandoc.Para({pandoc.Strong(item[1])}))
    for _, def in ipairs(item[2]) do
      for _, block in ipairs(def) do table.insert(out, block) end
    end
  end
  return out
end
return {{Pandoc = function(doc)
  doc = doc:walk({Span = unwrap, Link = unwrap, Image = drop, HorizontalRule = drop})
  doc = doc:walk({Div = unwrap})
  doc = doc:walk({Header = header, DefinitionList = deflist})
  return doc
end}}
LUA
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook" \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
n=$(grep -o '<div class="chapter"' "$TMP/page.html" | wc -l)
[ "$n" -eq 4 ] || { echo "expected 4 chapters, found $n" >&2; exit 1; }
HOME="$TMP/home" "$PANDOC" -f html -t commonmark --wrap=none --lua-filter="$TMP/filter.lua" \
  -o "$TMP/minuet-handbook-ru.md" "$TMP/page.html"
{
  printf '<!DOCTYPE html>\n<html lang="ru">\n<head>\n<meta charset="utf-8">\n'
  printf '<title>Руководство пользователя Minuet</title>\n</head>\n<body>\n'
  HOME="$TMP/home" "$CMARK" --to html "$TMP/minuet-handbook-ru.md"
  printf '</body>\n</html>\n'
} > "$TMP/minuet-handbook-ru.html"
n=$(grep -c '^<h[1-6]>Глава [1-4]\. ' "$TMP/minuet-handbook-ru.html")
[ "$n" -eq 4 ] || { echo "expected 4 chapter headings, found $n" >&2; exit 1; }
cp "$TMP/minuet-handbook-ru.html" "$OUT/minuet-handbook-ru.html"
test -s "$OUT/minuet-handbook-ru.html"
