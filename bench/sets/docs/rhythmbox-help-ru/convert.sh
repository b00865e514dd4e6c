#!/bin/sh
# Set AB's documents: the whole Russian help of the Rhythmbox music player («Музыкальный проигрыватель
# Rhythmbox», the manual for Rhythmbox 3.4.4; DocBook XML 4.1.2, rhythmbox-data 3.4.6-2,
# /usr/share/help/ru/rhythmbox/index.docbook with its legal.xml), built into HTML pages by xsltproc with the
# standard DocBook XSL chunking stylesheet (html/chunk.xsl): one page per top-level section (sect1) and the
# title page as index.html, files named by the sections' ids, output in UTF-8, Russian generated text
# (the article's lang attribute is «rhythmbox-ru», which the stylesheets do not know), no tables of
# contents and no navigation bars. The pictures are <img> tags whose files are not copied beside the pages.
#   apt-get install -y --no-install-recommends rhythmbox-data docbook-xsl docbook-xml xsltproc
# Made with Debian 12's rhythmbox-data 3.4.6-2 (its .deb unpacked under /tmp; SRC may name such a copy),
# docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12 and xsltproc (libxslt 1.1.35). The DocBook DTD is resolved
# through the system XML catalog; nothing is fetched from the network. Two runs give the same bytes.
set -eu
SRC=${SRC:-/usr/share/help/ru/rhythmbox}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/utf8.xsl" <<'XSL'
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">
  <xsl:import href="/usr/share/xml/docbook/stylesheet/docbook-xsl/html/chunk.xsl"/>
  <xsl:param name="chunker.output.encoding" select="'UTF-8'"/>
  <xsl:param name="chunker.output.indent" select="'no'"/>
</xsl:stylesheet>
XSL
rm -f "$OUT"/*.html
xsltproc --nonet --stringparam generate.toc '' --stringparam use.id.as.filename 1 \
  --stringparam suppress.navigation 1 --stringparam chunk.first.sections 1 --stringparam l10n.gentext.language ru \
  --stringparam base.dir "$OUT/" "$TMP/utf8.xsl" "$SRC/index.docbook"
