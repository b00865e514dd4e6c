#!/bin/sh
# Set AX's document: the whole Russian handbook of KMines, KDE's version of the classic Minesweeper game («Руководство
# KMines»), from the DocBook source that kmines ships (/usr/share/doc/HTML/ru/kmines/index.docbook, beside KDE's own
# rendering index.cache.bz2), built into one HTML page by xsltproc with the standard DocBook XSL stylesheets
# (html/docbook.xsl, output in UTF-8, no tables of contents), its <img> tags removed by sed (the two screenshots are not
# shipped in the Russian folder, and Writer would keep an empty frame linking to the missing file for each), then opened
# by LibreOffice Writer as a text document (its HTML import filter, `--infilter="HTML (StarWriter)"`) and saved as ODT
# (`--convert-to odt:writer8`, headless), as set AJ's script. Writer gets the page in a folder of the temporary one and
# writes the ODT to another, so the two relative links to the licence pages come out the same from run to run
# («../../html/fdl-license.html»). KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is
# fetched from the network.
# LibreOffice 7.4 reads no SOURCE_DATE_EPOCH: it stamps each zip entry with the time of the run, and it draws a random
# revision-save id for the document at each run (Rsid and RsidRoot in settings.xml). Here soffice runs under faketime
# with the wall clock stopped at 2026-11-28 00:00:00 UTC (`faketime -f`, an absolute time without «@», so it does not
# advance; the monotonic clock left real by FAKETIME_DONT_FAKE_MONOTONIC=1, so LibreOffice's timers still run) and with
# SAL_RAND_REPEATABLE set, which makes LibreOffice seed its random numbers with a fixed value; with both two runs give
# the same bytes.
#   apt-get install -y --no-install-recommends kmines kdoctools5 docbook-xsl docbook-xml xsltproc \
#     libreoffice-writer-nogui faketime
# Made with Debian 12's kmines 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), LibreOffice
# 7.4.7.2 (libreoffice-writer-nogui 4:7.4.7-1+deb12u14) and faketime / libfaketime 0.9.10-2.1.
set -eu
SRC=${SRC:-/usr/share/doc/HTML/ru/kmines}
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
mkdir "$TMP/html"
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/kmines-handbook-ru.html"
SAL_RAND_REPEATABLE=1 TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "2026-11-28 00:00:00" \
  soffice -env:UserInstallation="file://$TMP/profile" --headless --infilter="HTML (StarWriter)" \
  --convert-to odt:writer8 --outdir "$TMP/out" "$TMP/html/kmines-handbook-ru.html" > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/kmines-handbook-ru.odt" "$OUT/kmines-handbook-ru.odt"
test -s "$OUT/kmines-handbook-ru.odt"
