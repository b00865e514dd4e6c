#!/bin/sh
# Set AZ's document: the whole Russian handbook of Skanlite, KDE's program for scanning and saving images
# («Руководство пользователя Skanlite»), from the DocBook source that skanlite ships (/usr/share/doc/HTML/ru/skanlite/
# index.docbook, beside KDE's own rendering index.cache.bz2), built into one HTML page by xsltproc with the standard
# DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no tables of contents), its <img> tags removed by sed (the
# 14 screenshots are not shipped in the Russian folder, and pandoc would keep each as a link to a missing file), then
# rewritten by pandoc as one file in pandoc's own Markdown (set U's file is GitHub-flavoured, from KDE's cache): no raw
# HTML, no native divs or spans, no attributes, em dashes kept as characters (no «smart» ASCII «---»), no line
# wrapping, so that each paragraph, list item or definition is one line. KDE's DTD and
# entities resolve through the XML catalog of kdoctools5; nothing is fetched from the network.
#   apt-get install -y --no-install-recommends skanlite kdoctools5 docbook-xsl docbook-xml xsltproc pandoc
# Made with Debian 12's skanlite 22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35) and pandoc
# 2.17.1.1-2~deb12u1. Markdown is plain text with no date or random id in it: two runs give the same bytes.
set -eu
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/doc/HTML/ru/skanlite}
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
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/skanlite-handbook-ru.html"
"$PANDOC" -f html \
  -t markdown-raw_html-native_divs-native_spans-fenced_divs-bracketed_spans-link_attributes-header_attributes-inline_code_attributes-smart \
  --wrap=none -o "$OUT/skanlite-handbook-ru.md" "$TMP/skanlite-handbook-ru.html"
test -s "$OUT/skanlite-handbook-ru.md"
