#!/bin/sh
# Set BZ's document: the whole Russian handbook of Kiten, KDE's Japanese reference and study tool («Руководство
# пользователя Kiten»), from the DocBook source that kiten ships (/usr/share/doc/HTML/ru/kiten/index.docbook), built
# into one HTML page by xsltproc with the standard DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no
# tables of contents), its <img> tags removed by sed (the handbook shows screenshots, and the Russian folder holds
# none), then converted by calibre into one plain text file (`ebook-convert … .txt`), where the earlier plain text files
# were shipped as they are or written by pandoc, w3m and LibreOffice Writer.
# calibre's TXT writer («plain» formatting, UTF-8, Unix line ends, no maximum line length) writes each heading,
# paragraph, list item, term and table cell as one line, separated by a blank line, with no list markers and no
# indents; it writes no date and no id.
# KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the network.
# Reproducibility. Two plain runs gave the same bytes; nothing had to be fixed. The script hands calibre the title and
# the language in an OPF file (`--from-opf`), so that they do not depend on the locale, and keeps calibre's
# configuration and runtime folders and HOME in the temporary one. Two runs give the same bytes, also from a copy of the
# source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends kiten kdoctools5 docbook-xsl docbook-xml xsltproc calibre
# Made with Debian 12's kiten 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35) and calibre 6.13.0
# (calibre 6.13.0+repack-2+deb12u10).
set -eu
EBOOK_CONVERT=${EBOOK_CONVERT:-ebook-convert}
SRC=${SRC:-/usr/share/doc/HTML/ru/kiten}
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
    <dc:title>Руководство пользователя Kiten</dc:title>
    <dc:language>ru</dc:language>
  </metadata>
</package>
OPF
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook" \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
n=$(grep -o '<div class="chapter"' "$TMP/page.html" | wc -l)
[ "$n" -eq 5 ] || { echo "expected 5 chapters, found $n" >&2; exit 1; }
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/kiten-handbook-ru.html"
HOME="$TMP/home" CALIBRE_CONFIG_DIRECTORY="$TMP/calibre" XDG_RUNTIME_DIR="$TMP/runtime" \
  "$EBOOK_CONVERT" "$TMP/html/kiten-handbook-ru.html" "$TMP/out/kiten-handbook-ru.txt" \
  --from-opf "$TMP/metadata.opf" --txt-output-encoding utf-8 --newline unix \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/kiten-handbook-ru.txt" "$OUT/kiten-handbook-ru.txt"
test -s "$OUT/kiten-handbook-ru.txt"
