#!/bin/sh
# Set AN's document: the whole Russian handbook of Kig, KDE's interactive geometry program («Руководство пользователя
# Kig»), from the DocBook source that kig ships (/usr/share/doc/HTML/ru/kig/index.docbook, beside KDE's own rendering
# index.cache.bz2), built into one HTML page by xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl,
# output in UTF-8, no tables of contents), then converted to one DOCX by pandoc (its HTML reader and docx writer, the
# default reference.docx), where set W's DOCX came from meinproc5's pages. The pictures are left out with their
# <img> tags, removed by sed before pandoc reads the page (the Russian folder ships none, and pandoc would put each
# missing one's alt text in its place); nothing else is dropped. KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the
# network.
#   apt-get install -y --no-install-recommends kig kdoctools5 docbook-xsl docbook-xml xsltproc pandoc
# Made with Debian 12's kig 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35) and pandoc
# 2.17.1.1-2~deb12u1. The DOCX is not byte-reproducible (pandoc writes the date into docProps/core.xml), its text
# is; the file the set was written on is committed beside this script.
set -eu
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/doc/HTML/ru/kig}
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
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/kig-handbook-ru.html" \
  "$TMP/utf8.xsl" "$SRC/index.docbook"
sed 's/<img [^>]*>//g' "$TMP/kig-handbook-ru.html" > "$TMP/page.html"
"$PANDOC" -s -f html -t docx --metadata lang=ru -o "$OUT/kig-handbook-ru.docx" "$TMP/page.html"
test -s "$OUT/kig-handbook-ru.docx"
