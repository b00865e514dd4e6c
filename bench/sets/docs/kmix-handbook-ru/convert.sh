#!/bin/sh
# Set BL's document: the whole Russian handbook of KMix, KDE's sound mixer («Руководство KMix»), from the DocBook
# source that kmix ships (/usr/share/doc/HTML/ru/kmix/index.docbook, beside KDE's own rendering index.cache.bz2; the
# Russian folder ships no pictures), built into one HTML page by xsltproc with the standard DocBook XSL stylesheets
# (html/docbook.xsl, output in UTF-8, no tables of contents), its <img> tags removed by sed (the page shows four
# screenshots, none of them in the Russian folder), then opened by AbiWord, GNOME Office's word processor, and saved
# as one OpenDocument text (`abiword --to=odt`, its HTML import and its OpenDocument export, no window), where the
# earlier ODT files were written by pandoc and LibreOffice Writer. AbiWord gives the page's headings outline levels 1
# to 3 (text:h) and keeps its paragraphs and list items; the terms of DocBook's variable lists stand as paragraphs
# before their descriptions.
# KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the network.
# Reproducibility. The ODT AbiWord writes holds no date in meta.xml (only the generator, the title and the keywords)
# and no random id, but every zip entry carries the time of the run (two plain runs differed there and nowhere else);
# so abiword runs under faketime with the wall clock stopped at 2026-11-29 00:00:00 UTC (`faketime -f`, an absolute
# time without «@», so it does not advance; the monotonic clock left real by FAKETIME_DONT_FAKE_MONOTONIC=1). With
# that two runs give the same bytes, also from a copy of the source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends kmix kdoctools5 docbook-xsl docbook-xml xsltproc abiword faketime
# Made with Debian 12's kmix 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), AbiWord 3.0.5
# (abiword 3.0.5~dfsg-3.2, libgsf 1.14.50) and faketime / libfaketime 0.9.10-2.1.
set -eu
ABIWORD=${ABIWORD:-abiword}
SRC=${SRC:-/usr/share/doc/HTML/ru/kmix}
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
mkdir "$TMP/html" "$TMP/out"
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/kmix-handbook-ru.html"
TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "2026-11-29 00:00:00" \
  "$ABIWORD" --to=odt -o "$TMP/out/kmix-handbook-ru.odt" "$TMP/html/kmix-handbook-ru.html" > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/kmix-handbook-ru.odt" "$OUT/kmix-handbook-ru.odt"
test -s "$OUT/kmix-handbook-ru.odt"
