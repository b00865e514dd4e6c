#!/bin/sh
# Set AW's document: the whole Russian handbook of KBruch, KDE's program for practising fractions and percentages
# («Руководство пользователя KBruch»), from the DocBook source that kbruch ships (/usr/share/doc/HTML/ru/kbruch/
# index.docbook, beside KDE's own rendering index.cache.bz2 and 11 of its 12 screenshots), built into one HTML page by
# xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no tables of contents), then
# converted to one EPUB 3 by pandoc (its HTML reader and epub3 writer, its default stylesheet and title page), as set
# AU's script with the writer changed. The pictures are left out with their <img> tags, removed by sed before pandoc
# reads the page (pandoc reads the page in a temporary folder, finds none of them and would keep each as a link to a
# file the EPUB does not hold); nothing else is dropped. KDE's DTD and entities resolve through the XML catalog of
# kdoctools5; nothing is fetched from the network.
#   apt-get install -y --no-install-recommends kbruch kdoctools5 docbook-xsl docbook-xml xsltproc pandoc faketime
# Made with Debian 12's kbruch 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), pandoc
# 2.17.1.1-2~deb12u1 and faketime / libfaketime 0.9.10-2.1. pandoc 2.17's EPUB writer takes the book's dates from
# SOURCE_DATE_EPOCH but gives it a random uuid as identifier and stamps the zip entries with the time of the run: the
# identifier is fixed below (--metadata identifier=kbruch-handbook-ru), and pandoc runs under faketime with the wall
# clock stopped at 2026-11-28 00:00:00 UTC (`faketime -f`, an absolute time without «@», so it does not advance; the
# monotonic clock left real); with that two runs give the same bytes.
set -eu
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/doc/HTML/ru/kbruch}
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
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/kbruch-handbook-ru.html" \
  "$TMP/utf8.xsl" "$SRC/index.docbook"
sed 's/<img [^>]*>//g' "$TMP/kbruch-handbook-ru.html" > "$TMP/page.html"
SOURCE_DATE_EPOCH=1795824000 TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "2026-11-28 00:00:00" \
  "$PANDOC" -s -f html -t epub3 --metadata lang=ru --metadata identifier=kbruch-handbook-ru \
  -o "$OUT/kbruch-handbook-ru.epub" "$TMP/page.html"
test -s "$OUT/kbruch-handbook-ru.epub"
