#!/bin/sh
# Set Y's document: the whole Russian handbook of KmPlot, KDE's mathematical function plotter
# («Руководство пользователя KmPlot», edition 1.3.0), from the DocBook sources that kmplot ships
# (/usr/share/doc/HTML/ru/kmplot/*.docbook, beside KDE's own rendering index.cache.bz2), built into one
# HTML page by xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8,
# no tables of contents). KDE's DTD and entities (&kmplot;, the translators' names, the licence
# texts) are resolved through the XML catalog of kdoctools5; nothing is fetched from the network.
#   apt-get install -y --no-install-recommends kmplot kdoctools5 docbook-xsl docbook-xml xsltproc
# Made with Debian 12's kmplot 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy),
# kdoctools5 5.103.0-1, docbook-xsl 1.79.2+dfsg-2 and xsltproc (libxslt 1.1.35). Two runs give the
# same bytes.
set -eu
SRC=${SRC:-/usr/share/doc/HTML/ru/kmplot}
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
  xsltproc --nonet --stringparam generate.toc '' -o "$OUT/kmplot-handbook-ru.html" \
  "$TMP/utf8.xsl" "$SRC/index.docbook"
