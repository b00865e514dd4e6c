#!/bin/sh
# Set BF's document: the whole Russian handbook of Knights, KDE's chess game («Руководство пользователя Knights»),
# from the DocBook source that knights ships (/usr/share/doc/HTML/ru/knights/index.docbook, beside KDE's own rendering
# index.cache.bz2), built into one HTML page by xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl,
# output in UTF-8, no tables of contents), then rewritten as one Markdown file by html2text (Debian's
# python3-html2text, its command html2markdown), where sets U's and AZ's Markdown came from pandoc: no line wrapping
# (`--body-width=0`, so that each paragraph, list item or heading is one line) and no pictures (`--ignore-images`: only
# five of the handbook's 20 screenshots and diagrams are shipped in the Russian folder, and html2text would keep each
# as a link to a file the document does not hold). Links to web addresses keep their targets in Markdown's
# [text](address) form; headings are Markdown's #-lines, list items «  * ». KDE's DTD and entities resolve through
# the XML catalog of kdoctools5; nothing is fetched from the network.
#   apt-get install -y --no-install-recommends knights kdoctools5 docbook-xsl docbook-xml xsltproc python3-html2text
# Made with Debian 12's knights 22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35) and
# python3-html2text 2020.1.16-2.
set -eu
HTML2MARKDOWN=${HTML2MARKDOWN:-html2markdown}
SRC=${SRC:-/usr/share/doc/HTML/ru/knights}
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
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/knights-handbook-ru.html" "$TMP/utf8.xsl" "$SRC/index.docbook"
"$HTML2MARKDOWN" --body-width=0 --ignore-images "$TMP/knights-handbook-ru.html" utf-8 > "$OUT/knights-handbook-ru.md"
test -s "$OUT/knights-handbook-ru.md"
