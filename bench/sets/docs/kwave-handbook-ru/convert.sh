#!/bin/sh
# Set BQ's document: chapter 3 «Использование Kwave» of the Russian handbook of Kwave, KDE's sound editor («Руководство
# пользователя Kwave»), from the DocBook source that kwave ships (/usr/share/doc/HTML/ru/kwave/index.docbook), built
# into one HTML page of that chapter by xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl, output in
# UTF-8, no tables of contents, rootid=using-kwave, so that the stylesheets read the whole book and write chapter 3
# alone), its <img> tags removed by sed (the chapter shows eight screenshots and 17 small pictures of buttons, toolbar
# icons and the channel lights, and the Russian folder holds no pictures), then laid out and printed as one PDF by
# HTMLDOC (`htmldoc --webpage`), where the earlier PDFs came from pdfTeX, xdvipdfmx, LibreOffice, WeasyPrint, LuaTeX,
# Chromium, wkhtmltopdf, AbiWord through cairo and MuPDF.
# HTMLDOC lays the page out as one continuous web page (--webpage: no title page, no table of contents) on A4 pages
# (--size a4) in the Type 1 fonts of htmldoc-common (Times for the text, Helvetica for the headings, Courier for
# commands and examples), reads the page as UTF-8 (--charset utf-8) and embeds the fonts whole (--embedfonts), their
# glyphs named, so pdftotext reads real Cyrillic; there is no running head (--header ...), the page number stands at the
# foot of each page (--footer .1.), and no word is hyphenated.
# KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the network.
# Reproducibility. HTMLDOC writes the creation date into the PDF and makes the file id from the output path and that
# date, so two plain runs differed in both. The script sets the date by SOURCE_DATE_EPOCH (2026-11-29 00:00:00 UTC),
# which HTMLDOC reads, and has HTMLDOC write to a bare file name in the temporary folder, so that the id does not depend
# on the folder's random name. Two runs give the same bytes, also from a copy of the source in another folder and with
# LC_ALL=C.
#   apt-get install -y --no-install-recommends kwave kdoctools5 docbook-xsl docbook-xml xsltproc htmldoc
# Made with Debian 12's kwave 22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5 5.103.0-1,
# docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35) and HTMLDOC 1.9.16 (htmldoc
# 1.9.16-1, htmldoc-common 1.9.16-1).
set -eu
HTMLDOC=${HTMLDOC:-htmldoc}
SRC=${SRC:-/usr/share/doc/HTML/ru/kwave}
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
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet --stringparam generate.toc '' --stringparam rootid using-kwave \
  -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook"
n=$(grep -o '<div class="chapter"' "$TMP/page.html" | wc -l)
[ "$n" -eq 1 ] || { echo "expected 1 chapter, found $n" >&2; exit 1; }
mkdir "$TMP/html" "$TMP/out"
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/kwave-handbook-ru.html"
cd "$TMP/out"
SOURCE_DATE_EPOCH=1795910400 "$HTMLDOC" --webpage --charset utf-8 --size a4 --embedfonts --header ... \
  --footer .1. -t pdf14 -f kwave-handbook-ru.pdf ../html/kwave-handbook-ru.html > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/kwave-handbook-ru.pdf" "$OUT/kwave-handbook-ru.pdf"
test -s "$OUT/kwave-handbook-ru.pdf"
