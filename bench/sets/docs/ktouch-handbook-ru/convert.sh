#!/bin/sh
# Set AY's document: the whole Russian handbook of KTouch, KDE's touch-typing tutor («Руководство пользователя KTouch»),
# from the DocBook source that ktouch-data ships (/usr/share/doc/HTML/ru/ktouch/index.docbook, beside KDE's own
# rendering index.cache.bz2), built into one HTML page by xsltproc with the standard DocBook XSL stylesheets
# (html/docbook.xsl, output in UTF-8, no tables of contents), then printed to one PDF by wkhtmltopdf (Qt WebKit, its
# default A4 page and margins, DejaVu fonts through fontconfig), as set AS's page with a new producer. Before printing
# sed removes the page's <img> tags (none of the screenshots and icons is shipped in the Russian folder, and WebKit
# would draw a broken-picture frame for each) and the href attributes of its links: Debian's wkhtmltopdf runs on an
# unpatched Qt, which writes every link, the page's own anchors included, as an absolute file:// address of the
# temporary folder, so the links would change from run to run; without them the PDF has no link annotations. The text
# is not changed. KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the
# network.
#   apt-get install -y --no-install-recommends ktouch-data kdoctools5 docbook-xsl docbook-xml xsltproc wkhtmltopdf \
#     fonts-dejavu-core fonts-dejavu-extra faketime
# Made with Debian 12's ktouch-data 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), wkhtmltopdf
# 0.12.6-2+b1 (Qt 5.15.8, libqt5webkit5 5.212.0~alpha4-30), fonts-dejavu-core and fonts-dejavu-extra 2.37-6, fontconfig
# 2.14.1-4 and faketime / libfaketime 0.9.10-2.1. wkhtmltopdf reads no SOURCE_DATE_EPOCH: it writes the time of the run
# as /CreationDate, and Qt's PDF writer embeds the font subsets in the order of a hash table whose seed is drawn at each
# run. Here wkhtmltopdf runs under faketime with the wall clock stopped at 2026-11-28 00:00:00 UTC (`faketime -f`, an
# absolute time without «@», so it does not advance; the monotonic clock left real) and with QT_HASH_SEED=0, which fixes
# Qt's hash seed; with both two runs give the same bytes. QT_QPA_PLATFORM=offscreen lets it run without a display.
set -eu
SRC=${SRC:-/usr/share/doc/HTML/ru/ktouch}
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
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook"
sed -e 's/<img [^>]*>//g' -e 's/ href="[^"]*"//g' "$TMP/page.html" > "$TMP/ktouch-handbook-ru.html"
mkdir -m 700 "$TMP/run"
QT_HASH_SEED=0 QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR="$TMP/run" TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 \
  faketime -f "2026-11-28 00:00:00" \
  wkhtmltopdf --quiet "$TMP/ktouch-handbook-ru.html" "$OUT/ktouch-handbook-ru.pdf"
test -s "$OUT/ktouch-handbook-ru.pdf"
