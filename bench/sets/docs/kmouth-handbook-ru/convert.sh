#!/bin/sh
# Set AV's document: the whole Russian handbook of KMouth, KDE's speech synthesizer front end for people who cannot
# speak («Руководство пользователя KMouth»), from the DocBook source that kmouth ships
# (/usr/share/doc/HTML/ru/kmouth/index.docbook, beside KDE's own rendering index.cache.bz2), built into one HTML page by
# xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no tables of contents), then
# opened by LibreOffice Writer as a text document (its HTML import filter, `--infilter="HTML (StarWriter)"`) and
# exported to PDF by Writer's own PDF export (`--convert-to pdf:writer_pdf_Export`, headless), as set AM's script.
# KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the network. Pictures
# are not copied: the page's <img> tags point at files that are not there, and Writer leaves their places empty.
# LibreOffice 7.4 reads no SOURCE_DATE_EPOCH: it writes the time of the run into the PDF as /CreationDate and derives
# the trailer /ID from that time (to the nanosecond) and the document's information, so two plain runs differ in those
# bytes. Here soffice runs under faketime with the wall clock stopped at 2026-11-28 00:00:00 UTC (`faketime -f`,
# an absolute time without «@», so it does not advance) and the monotonic clock left real
# (FAKETIME_DONT_FAKE_MONOTONIC=1, so LibreOffice's timers still run); with that two runs give the same bytes.
#   apt-get install -y --no-install-recommends kmouth kdoctools5 docbook-xsl docbook-xml xsltproc \
#     libreoffice-writer-nogui faketime
# Made with Debian 12's kmouth 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), LibreOffice
# 7.4.7.2 (libreoffice-writer-nogui 4:7.4.7-1+deb12u14) and faketime / libfaketime 0.9.10-2.1.
set -eu
SRC=${SRC:-/usr/share/doc/HTML/ru/kmouth}
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
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/kmouth-handbook-ru.html" \
  "$TMP/utf8.xsl" "$SRC/index.docbook"
TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "2026-11-28 00:00:00" \
  soffice -env:UserInstallation="file://$TMP/profile" --headless --infilter="HTML (StarWriter)" \
  --convert-to pdf:writer_pdf_Export --outdir "$OUT" "$TMP/kmouth-handbook-ru.html" > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
test -s "$OUT/kmouth-handbook-ru.pdf"
