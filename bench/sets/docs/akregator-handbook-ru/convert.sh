#!/bin/sh
# Set AH's document: the whole Russian handbook of Akregator, KDE's news feed reader («Руководство пользователя
# Akregator»), from the DocBook source that akregator ships (/usr/share/doc/HTML/ru/akregator/index.docbook,
# beside KDE's own rendering index.cache.bz2), built into one HTML page by xsltproc with the standard DocBook XSL stylesheets
# (html/docbook.xsl, output in UTF-8, no tables of contents), then printed to PDF by LibreOffice Writer/Web
# (`soffice --convert-to pdf:writer_web_pdf_Export`). KDE's DTD and entities resolve through the XML catalog
# of kdoctools5; nothing is fetched from the network.
#   apt-get install -y --no-install-recommends akregator kdoctools5 docbook-xsl docbook-xml xsltproc \
#     libreoffice-writer-nogui
# Made with Debian 12's akregator 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy),
# kdoctools5 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, xsltproc (libxslt 1.1.35) and LibreOffice 7.4.7.2.
# LibreOffice writes the time of the run and a random document id into the PDF, so two runs differ in
# those bytes; the text is the same. The PDF the set was written on is committed.
set -eu
SRC=${SRC:-/usr/share/doc/HTML/ru/akregator}
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
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/akregator-handbook-ru.html" \
  "$TMP/utf8.xsl" "$SRC/index.docbook"
soffice -env:UserInstallation=file://$TMP/profile --headless \
  --convert-to pdf:writer_web_pdf_Export --outdir "$OUT" "$TMP/akregator-handbook-ru.html" > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
test -s "$OUT/akregator-handbook-ru.pdf"
