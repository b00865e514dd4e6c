#!/bin/sh
# Set BN's document: chapter 3 «Работа в Umbrello UML Modeller» of the Russian handbook of Umbrello UML Modeller, KDE's
# program for drawing UML diagrams («Руководство пользователя Umbrello UML Modeller»), from the DocBook source that
# umbrello-data ships (/usr/share/doc/HTML/ru/umbrello: index.docbook with the chapters in files of their own,
# working_with_umbrello.docbook for this one), built into one HTML page by xsltproc with the standard DocBook XSL
# stylesheets (html/docbook.xsl, output in UTF-8, no tables of contents, `rootid` set to the chapter's id, so that only
# that chapter is written; the whole book is read, its other chapters are left out), its <img> tags removed by sed (the
# chapter shows one screenshot, the main window, and the Russian folder holds no pictures), then opened by AbiWord,
# GNOME Office's word processor, and printed as one PDF (`abiword --to=pdf`, its HTML import and its PDF export through
# cairo, no window), where the earlier PDFs came from pdfTeX, xdvipdfmx, LibreOffice, WeasyPrint, LuaTeX, Chromium and
# wkhtmltopdf. AbiWord lays the chapter out on A4 pages in Liberation Serif and Liberation Sans (fonts-liberation2),
# without hyphenation, headers or footers; cairo embeds the fonts as subsets with a Unicode map, so pdftotext reads real
# Cyrillic.
# KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the network.
# Reproducibility. The PDF cairo writes holds the time of the run as its creation date and no random id (two plain
# runs differed there and nowhere else); so abiword runs under faketime with the wall clock stopped at 2026-11-29
# 00:00:00 UTC (`faketime -f`, an absolute time without «@», so it does not advance; the monotonic clock left real by
# FAKETIME_DONT_FAKE_MONOTONIC=1), and with HOME in the temporary folder, so that no AbiWord profile of the user is
# read or written. With that two runs give the same bytes, also from a copy of the source in another folder and with
# LC_ALL=C. The fonts are those fontconfig finds: another version of the Liberation fonts or of cairo would give
# other bytes.
#   apt-get install -y --no-install-recommends umbrello-data kdoctools5 docbook-xsl docbook-xml xsltproc abiword \
#       fonts-liberation2 faketime
# Made with Debian 12's umbrello-data 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), AbiWord 3.0.5
# (abiword 3.0.5~dfsg-3.2), cairo 1.16.0 (libcairo2 1.16.0-7), fonts-liberation2 2.1.5-1 and faketime / libfaketime
# 0.9.10-2.1.
set -eu
ABIWORD=${ABIWORD:-abiword}
SRC=${SRC:-/usr/share/doc/HTML/ru/umbrello}
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
  xsltproc --nonet --stringparam generate.toc '' --stringparam rootid working-with-umbrello \
  -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook"
mkdir "$TMP/html" "$TMP/out" "$TMP/home"
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/umbrello-handbook-ru.html"
HOME="$TMP/home" TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "2026-11-29 00:00:00" \
  "$ABIWORD" --to=pdf -o "$TMP/out/umbrello-handbook-ru.pdf" "$TMP/html/umbrello-handbook-ru.html" > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/umbrello-handbook-ru.pdf" "$OUT/umbrello-handbook-ru.pdf"
test -s "$OUT/umbrello-handbook-ru.pdf"
