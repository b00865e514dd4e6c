#!/bin/sh
# Set BP's document: the whole Russian help of Sound Juicer, GNOME's audio CD ripper, whose Russian name is
# «Звуковыжималка» («Руководство по Звуковыжималке»; DocBook, sound-juicer 3.38.0-2.1,
# /usr/share/help/ru/sound-juicer/index.docbook, the manual's revision 2.22.0), built into one HTML page by xsltproc
# with the standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no tables of contents, the generated
# words in Russian: the article's lang attribute reads «sound-juicer-ru», for which the stylesheets have no
# localisation, so l10n.gentext.language is set to ru), its <img> tags removed by sed (the screenshots are links to the
# C locale's pictures), then converted by calibre into one Rich Text file (`ebook-convert … .rtf`), where the earlier RTF
# files were written by pandoc and LibreOffice Writer. The source includes legal.xml by XInclude, but the package ships
# no legal.xml; xsltproc runs without --xinclude and the licence notice is not in the document. calibre's RTF writer
# turns each heading, paragraph, list item and table cell into an RTF paragraph, writes every letter beyond ASCII as a
# \uN escape and the title, in its \info group, as ASCII (a question mark for each Cyrillic letter); it writes no date
# and no random id.
# Reproducibility. Two plain runs gave the same bytes, also with different hash seeds; nothing had to be fixed. The
# script hands calibre the title and the language in an OPF file (`--from-opf`), so that they do not depend on the
# locale, and keeps calibre's configuration and runtime folders and HOME in the temporary one. Two runs give the same
# bytes, also from a copy of the source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends sound-juicer docbook-xsl docbook-xml xsltproc calibre
# Made with Debian 12's sound-juicer 3.38.0-2.1 (its .deb unpacked under /tmp; SRC may name such a copy), docbook-xsl
# 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35) and calibre 6.13.0 (calibre
# 6.13.0+repack-2+deb12u10).
set -eu
EBOOK_CONVERT=${EBOOK_CONVERT:-ebook-convert}
SRC=${SRC:-/usr/share/help/ru/sound-juicer}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/html" "$TMP/out" "$TMP/calibre" "$TMP/runtime" "$TMP/home"
chmod 700 "$TMP/runtime"
cat > "$TMP/utf8.xsl" <<'XSL'
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">
  <xsl:import href="/usr/share/xml/docbook/stylesheet/docbook-xsl/html/docbook.xsl"/>
  <xsl:output method="html" encoding="UTF-8" indent="no"/>
</xsl:stylesheet>
XSL
cat > "$TMP/metadata.opf" <<'OPF'
<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="2.0">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:opf="http://www.idpf.org/2007/opf">
    <dc:title>Руководство по Звуковыжималке</dc:title>
    <dc:language>ru</dc:language>
  </metadata>
</package>
OPF
XML_CATALOG_FILES=/etc/xml/catalog \
  xsltproc --nonet --stringparam generate.toc '' --stringparam l10n.gentext.language ru \
  -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook" > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/sound-juicer-help-ru.html"
HOME="$TMP/home" CALIBRE_CONFIG_DIRECTORY="$TMP/calibre" XDG_RUNTIME_DIR="$TMP/runtime" \
  "$EBOOK_CONVERT" "$TMP/html/sound-juicer-help-ru.html" "$TMP/out/sound-juicer-help-ru.rtf" \
  --from-opf "$TMP/metadata.opf" > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/sound-juicer-help-ru.rtf" "$OUT/sound-juicer-help-ru.rtf"
test -s "$OUT/sound-juicer-help-ru.rtf"
