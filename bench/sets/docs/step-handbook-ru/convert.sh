#!/bin/sh
# Set AR's document: the whole Russian handbook of Step, KDE's interactive physics simulator («Руководство
# пользователя Step»), from the DocBook source that step ships (/usr/share/doc/HTML/ru/step/index.docbook with its two
# parts tutorials.docbook and examples.docbook, beside KDE's own rendering index.cache.bz2), built into one HTML page
# by xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no tables of contents),
# then converted to one DOCX by LibreOffice Writer (its HTML import filter, headless: `soffice
# --infilter="HTML (StarWriter)" --convert-to docx:"MS Word 2007 XML"`), where set AN's DOCX came from pandoc. KDE's
# DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the network. The pictures
# are left out with their <img> tags, removed by sed before LibreOffice reads the page (the Russian folder ships
# none); nothing else is dropped.
#   apt-get install -y --no-install-recommends step kdoctools5 docbook-xsl docbook-xml xsltproc \
#     libreoffice-writer-nogui
# Made with Debian 12's step 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35) and LibreOffice
# 7.4.7.2 (libreoffice-writer-nogui 4:7.4.7-1+deb12u14). LibreOffice writes the DOCX in a folder of the temporary
# one, so the links to the licence pages stay relative to it («../html/fdl-license.html»). The DOCX is not
# byte-reproducible: LibreOffice stamps its zip entries with the time of the run and reads no SOURCE_DATE_EPOCH; two
# runs give the same content in every part. The file the set was written on is committed beside this script.
set -eu
SRC=${SRC:-/usr/share/doc/HTML/ru/step}
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
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/step-handbook-ru.html"
soffice -env:UserInstallation="file://$TMP/profile" --headless --infilter="HTML (StarWriter)" \
  --convert-to docx:"MS Word 2007 XML" --outdir "$TMP/out" "$TMP/html/step-handbook-ru.html" > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/step-handbook-ru.docx" "$OUT/step-handbook-ru.docx"
test -s "$OUT/step-handbook-ru.docx"
