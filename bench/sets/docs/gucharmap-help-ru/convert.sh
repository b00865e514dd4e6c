#!/bin/sh
# Set BV's document: the whole Russian help of the GNOME Character Map, gucharmap («Руководство по Таблице символов»),
# from the DocBook source that gucharmap ships (/usr/share/help/ru/gucharmap/index.docbook), built into one HTML page
# by xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no table of contents), its
# <img> tag removed by sed (the window's screenshot; its caption stays), then opened by LibreOffice Writer with its
# HTML import and saved as plain text, UTF-8 (`soffice --convert-to "txt:Text (encoded):UTF8"`), where the earlier
# plain text files were shipped as they are or written by pandoc and w3m.
# LibreOffice writes each heading, paragraph, table cell and list item as one line without wrapping, the list items
# with the labels it numbers them with («1.», «•», «◦», indented four spaces a level), a UTF-8 byte order mark at the
# start and LF line ends. The source declares legal.xml as an entity but never uses it, so the document has no licence
# notice. The DocBook 4.1.2 DTD resolves through the system's XML catalog; nothing is fetched from the network.
# Reproducibility. Plain text holds no date or id: two plain runs gave the same bytes. LibreOffice runs with its
# profile (-env:UserInstallation) and HOME in the temporary folder, so that it neither reads nor writes the user's.
# Two runs give the same bytes, also from a copy of the source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends gucharmap docbook-xsl docbook-xml xsltproc libreoffice-writer-nogui
# Made with Debian 12's gucharmap 1:15.0.2-1 (its .deb unpacked under /tmp; SRC may name such a copy), docbook-xsl
# 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35) and LibreOffice 7.4.7.2
# (libreoffice-writer-nogui and libreoffice-core-nogui 4:7.4.7-1+deb12u14).
set -eu
SOFFICE=${SOFFICE:-soffice}
SRC=${SRC:-/usr/share/help/ru/gucharmap}
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
xsltproc --nonet --stringparam generate.toc '' -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook"
mkdir "$TMP/html" "$TMP/out" "$TMP/home"
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/gucharmap-help-ru.html"
HOME="$TMP/home" "$SOFFICE" -env:UserInstallation="file://$TMP/profile" --headless --infilter="HTML (StarWriter)" \
  --convert-to "txt:Text (encoded):UTF8" --outdir "$TMP/out" "$TMP/html/gucharmap-help-ru.html" > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/gucharmap-help-ru.txt" "$OUT/gucharmap-help-ru.txt"
test -s "$OUT/gucharmap-help-ru.txt"
