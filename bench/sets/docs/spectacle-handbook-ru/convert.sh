#!/bin/sh
# Set AS's document: the whole Russian handbook of Spectacle, KDE's screenshot program («Руководство пользователя
# Spectacle», release line «Приложения KDE 21.08»), from the DocBook source that kde-spectacle ships
# (/usr/share/doc/HTML/ru/spectacle/index.docbook, beside KDE's own rendering index.cache.bz2), built into one HTML
# page by xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no tables of
# contents), the render that sets AN's and AJ's scripts convert further, here committed as the HTML file itself
# (as set Y's). KDE's DTD and entities (&spectacle;, the translators' names, the licence notice) resolve through the
# XML catalog of kdoctools5; nothing is fetched from the network. Pictures are not copied: the page's <img> tags
# point at files that are not there (the Russian folder ships none).
#   apt-get install -y --no-install-recommends kde-spectacle kdoctools5 docbook-xsl docbook-xml xsltproc
# Made with Debian 12's kde-spectacle 22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12 and xsltproc (libxml 2.9.14, libxslt 1.1.35). Two runs give
# the same bytes.
set -eu
SRC=${SRC:-/usr/share/doc/HTML/ru/spectacle}
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
  xsltproc --nonet --stringparam generate.toc '' -o "$OUT/spectacle-handbook-ru.html" \
  "$TMP/utf8.xsl" "$SRC/index.docbook" > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
test -s "$OUT/spectacle-handbook-ru.html"
