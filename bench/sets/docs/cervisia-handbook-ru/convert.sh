#!/bin/sh
# Set BO's document: chapters 1-3 («Введение», «Работа с файлами», «Получение информации о файлах») of the Russian
# handbook of Cervisia, KDE's graphical front end to the CVS version control system («Руководство Cervisia»), from the
# DocBook source that cervisia ships (/usr/share/doc/HTML/ru/cervisia/index.docbook), built into one HTML page by
# xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no tables of contents; a layer
# with empty templates for chapters 4-7 «Расширенное использование», «Настройка Cervisia», «Приложение» and
# «Разработчики и лицензии», so that the book's title page and its first three chapters are written), its <img> tags
# removed by sed (the chapters show nine screenshots, and the Russian folder holds no pictures; the import command's
# four callout marks are pictures too, in the command and in its list), then laid out and written as one PDF by MuPDF
# (`mutool convert`, its HTML layout engine and its PDF writer), where the earlier PDFs came from pdfTeX, xdvipdfmx,
# LibreOffice, WeasyPrint, LuaTeX, Chromium, wkhtmltopdf and AbiWord through cairo.
# MuPDF lays the page out on A4 pages (-W 595 -H 842, in points; its default for HTML is a smaller page) in the fonts
# built into it (Charis SIL for the text, Nimbus Mono PS for commands and file names), without hyphenation, running
# heads or page numbers, and embeds the fonts whole as CID fonts with a Unicode map, so pdftotext reads real Cyrillic;
# `-O compress,garbage` compresses every stream, the fonts included, and drops unused objects.
# KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the network.
# Reproducibility. MuPDF writes no creation date, no producer and no random id into the PDF (two plain runs gave the
# same bytes; nothing had to be fixed). Its fonts are compiled into mutool, so the bytes do not depend on the fonts
# installed; another version of MuPDF would give other bytes. Two runs give the same bytes, also from a copy of the
# source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends cervisia kdoctools5 docbook-xsl docbook-xml xsltproc mupdf-tools
# Made with Debian 12's cervisia 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35) and MuPDF 1.21.1
# (mupdf-tools 1.21.1+ds2-1+deb12u1).
set -eu
MUTOOL=${MUTOOL:-mutool}
SRC=${SRC:-/usr/share/doc/HTML/ru/cervisia}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/chapters.xsl" <<'XSL'
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">
  <xsl:import href="/usr/share/xml/docbook/stylesheet/docbook-xsl/html/docbook.xsl"/>
  <xsl:output method="html" encoding="UTF-8" indent="no"/>
  <xsl:template match="chapter[@id='advancedusage' or @id='customization' or @id='appendix'
                       or @id='credits-and-licenses']"/>
</xsl:stylesheet>
XSL
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/page.html" "$TMP/chapters.xsl" "$SRC/index.docbook"
n=$(grep -o '<div class="chapter"' "$TMP/page.html" | wc -l)
[ "$n" -eq 3 ] || { echo "expected 3 chapters, found $n" >&2; exit 1; }
mkdir "$TMP/html" "$TMP/out"
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/cervisia-handbook-ru.html"
"$MUTOOL" convert -W 595 -H 842 -O compress,garbage -o "$TMP/out/cervisia-handbook-ru.pdf" \
  "$TMP/html/cervisia-handbook-ru.html" > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/cervisia-handbook-ru.pdf" "$OUT/cervisia-handbook-ru.pdf"
test -s "$OUT/cervisia-handbook-ru.pdf"
