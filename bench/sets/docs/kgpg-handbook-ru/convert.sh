#!/bin/sh
# Set AO's document: the whole Russian handbook of KGpg, KDE's graphical front end to GnuPG («Руководство пользователя
# KGpg»), from the DocBook source that kgpg ships (/usr/share/doc/HTML/ru/kgpg/
# index.docbook, beside KDE's own rendering index.cache.bz2), split into HTML pages by xsltproc with the
# standard DocBook XSL stylesheets (html/chunk.xsl: one page per chapter and per section after a chapter's
# first, plus the title page index.html; output in UTF-8, the stylesheets' file names `chNN.html`,
# `chNNsMM.html`). KDE's DTD and entities (&kgpg;, the translators' names, the licence notice) resolve
# through the XML catalog of kdoctools5; nothing is fetched from the network. Pictures are not copied: the
# pages' <img> tags point at files that are not there.
#   apt-get install -y --no-install-recommends kgpg kdoctools5 docbook-xsl docbook-xml xsltproc
# Made with Debian 12's kgpg 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy),
# kdoctools5 5.103.0-1, docbook-xsl 1.79.2+dfsg-2 and xsltproc (libxslt 1.1.35). Two runs give the same bytes.
set -eu
SRC=${SRC:-/usr/share/doc/HTML/ru/kgpg}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/chunk.xsl" <<'XSL'
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">
  <xsl:import href="/usr/share/xml/docbook/stylesheet/docbook-xsl/html/chunk.xsl"/>
  <xsl:param name="chunker.output.encoding" select="'UTF-8'"/>
</xsl:stylesheet>
XSL
rm -f "$OUT"/*.html
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet --stringparam base.dir "$OUT/" "$TMP/chunk.xsl" "$SRC/index.docbook" > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
