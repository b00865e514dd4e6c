#!/bin/sh
# Set CG's document: the whole Russian handbook of KGet, KDE's download manager («Руководство KGet»: adding downloads
# by dragging addresses, the drop target and its menu, the settings dialog with its pages (appearance, groups, network
# with its limits and reconnecting, the web interface, verification, the advanced options), the main window's File menu
# with its keys, Metalink and the history of downloads, and getting and building it), from the DocBook source that kget
# ships (/usr/share/doc/HTML/ru/kget/index.docbook), written as one plain text file by Lynx, the text-mode web browser,
# where the earlier plain text files were written by pandoc, w3m, LibreOffice Writer and calibre. xsltproc builds the
# DocBook into one HTML page with the standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no table of
# contents; KDE's DTD and entities through the XML catalog of kdoctools5, nothing fetched from the network), as set
# AX's script; sed removes the <img> tags (the fifteen screenshots). lynx -dump writes the page as text: the headings
# flush left, the paragraphs indented by three spaces, each term of a variable list indented by three and its
# description by ten, the ordered list numbered, a rule of underscores under the title page, the links' text without
# their numbers (-nolist). The lines are not wrapped at the usual 80 columns (-width=1024, the most Lynx allows), so
# each paragraph, term and description is one line. The script checks that the five chapters are written.
# Reproducibility. Nothing in the text depends on the time or the place of the run: lynx runs with its character sets
# named (-display_charset=utf-8, -assume_charset=utf-8) and with HOME in the temporary folder. Two runs give the same
# bytes, also from a copy of the source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends kget kdoctools5 docbook-xsl docbook-xml xsltproc lynx
# Made with Debian 12's kget 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35) and lynx
# 2.9.0dev.12-1.
set -eu
LYNX=${LYNX:-lynx}
SRC=${SRC:-/usr/share/doc/HTML/ru/kget}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/html" "$TMP/home"
cat > "$TMP/utf8.xsl" <<'XSL'
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">
  <xsl:import href="/usr/share/xml/docbook/stylesheet/docbook-xsl/html/docbook.xsl"/>
  <xsl:output method="html" encoding="UTF-8" indent="no"/>
</xsl:stylesheet>
XSL
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook" \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
n=$(grep -o '<div class="chapter"' "$TMP/page.html" | wc -l)
[ "$n" -eq 5 ] || { echo "expected 5 chapters, found $n" >&2; exit 1; }
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/kget-handbook-ru.html"
HOME="$TMP/home" "$LYNX" -dump -nolist -width=1024 -display_charset=utf-8 -assume_charset=utf-8 \
  "$TMP/html/kget-handbook-ru.html" > "$TMP/kget-handbook-ru.txt"
n=$(grep -c '^Глава [1-5]\. ' "$TMP/kget-handbook-ru.txt")
[ "$n" -eq 5 ] || { echo "expected 5 chapter headings, found $n" >&2; exit 1; }
cp "$TMP/kget-handbook-ru.txt" "$OUT/kget-handbook-ru.txt"
test -s "$OUT/kget-handbook-ru.txt"
