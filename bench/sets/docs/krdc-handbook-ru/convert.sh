#!/bin/sh
# Set AU's document: the whole Russian handbook of KRDC, KDE's remote desktop client («Руководство Remote Desktop
# Connection»), from the DocBook source that krdc ships (/usr/share/doc/HTML/ru/krdc/index.docbook, beside KDE's own
# rendering index.cache.bz2), built into one HTML page by xsltproc with the standard DocBook XSL stylesheets
# (html/docbook.xsl, output in UTF-8, no tables of contents), then converted to one DOCX by pandoc (its HTML reader and
# docx writer, the default reference.docx), as set AN's script. The pictures are left out with their <img> tags,
# removed by sed before pandoc reads the page (the Russian folder ships none, and pandoc would put each missing one's
# alt text in its place); nothing else is dropped. KDE's DTD and entities resolve through the XML catalog of
# kdoctools5; nothing is fetched from the network.
#   apt-get install -y --no-install-recommends krdc kdoctools5 docbook-xsl docbook-xml xsltproc pandoc
# Made with Debian 12's krdc 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35) and pandoc
# 2.17.1.1-2~deb12u1. pandoc writes the time of the run into docProps/core.xml and onto the zip entries unless
# SOURCE_DATE_EPOCH is set; with it fixed as below (2026-11-28 00:00:00 UTC) two runs give the same bytes.
set -eu
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/doc/HTML/ru/krdc}
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
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/krdc-handbook-ru.html" \
  "$TMP/utf8.xsl" "$SRC/index.docbook"
sed 's/<img [^>]*>//g' "$TMP/krdc-handbook-ru.html" > "$TMP/page.html"
SOURCE_DATE_EPOCH=1795824000 "$PANDOC" -s -f html -t docx --metadata lang=ru -o "$OUT/krdc-handbook-ru.docx" "$TMP/page.html"
test -s "$OUT/krdc-handbook-ru.docx"
