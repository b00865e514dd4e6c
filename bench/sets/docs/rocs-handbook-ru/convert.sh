#!/bin/sh
# Set BG's document: the whole Russian handbook of Rocs, KDE's graph theory program («Руководство пользователя Rocs»),
# from the DocBook source that rocs ships (/usr/share/doc/HTML/ru/rocs/index.docbook, beside KDE's own rendering
# index.cache.bz2 and four pictures), built into one HTML page by xsltproc with the standard DocBook XSL stylesheets
# (html/docbook.xsl, output in UTF-8, no tables of contents), its <img> tags removed by sed (the page shows four
# screenshots and eleven icons, and only two of the screenshots are among the pictures shipped in the Russian folder),
# then opened by LibreOffice Writer as a text document (its HTML import filter, `--infilter="HTML (StarWriter)"`) and
# exported as one EPUB 3 (`--convert-to epub`, headless: Writer's EPUB export through libepubgen, one XHTML file per
# chapter, its own style sheet, an XHTML navigation document and an NCX table of contents). Writer gets the page in a
# folder of the temporary one and writes the book to another, as sets AJ's and AX's scripts. KDE's DTD and entities
# resolve through the XML catalog of kdoctools5; nothing is fetched from the network.
# Reproducibility. LibreOffice 7.4 reads no SOURCE_DATE_EPOCH: the book's modification date (dcterms:modified) and
# every zip entry's time are the time of the run, so soffice runs under faketime with the wall clock stopped at
# 2026-11-29 00:00:00 UTC (`faketime -f`, an absolute time without «@», so it does not advance; the monotonic clock
# left real by FAKETIME_DONT_FAKE_MONOTONIC=1, so LibreOffice's timers still run). libepubgen also draws a random uuid
# as the book's identifier (dc:identifier in content.opf) at each run, and --convert-to cannot hand the EPUB filter one
# of its own (an RVNGIdentifier given in JSON filter options is ignored by LibreOffice 7.4); so the uuid in content.opf
# is replaced by a fixed one and that entry alone written back into the book by zip, with the same time (zip updates an
# entry in place: the order, the stored mimetype first and the other entries stay as Writer wrote them). With that
# two runs give the same bytes.
#   apt-get install -y --no-install-recommends rocs kdoctools5 docbook-xsl docbook-xml xsltproc \
#     libreoffice-writer-nogui faketime zip unzip
# Made with Debian 12's rocs 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), LibreOffice
# 7.4.7.2 (libreoffice-writer-nogui 4:7.4.7-1+deb12u14, libepubgen 0.1.1-1), faketime / libfaketime 0.9.10-2.1 and
# zip 3.0-13.
set -eu
SRC=${SRC:-/usr/share/doc/HTML/ru/rocs}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BOOK_ID=3c1f6a52-8d47-4e0b-b9a3-6f2e1d0c7b85
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
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/rocs-handbook-ru.html"
TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "2026-11-29 00:00:00" \
  soffice -env:UserInstallation="file://$TMP/profile" --headless --infilter="HTML (StarWriter)" \
  --convert-to epub --outdir "$TMP/out" "$TMP/html/rocs-handbook-ru.html" > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
mkdir "$TMP/fix"
cd "$TMP/fix"
unzip -q "$TMP/out/rocs-handbook-ru.epub" OEBPS/content.opf
grep -q '<dc:identifier id="unique-identifier">[0-9a-f-]\{36\}</dc:identifier>' OEBPS/content.opf \
  || { echo "no uuid identifier in content.opf" >&2; exit 1; }
sed -E "s/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/$BOOK_ID/" OEBPS/content.opf > content.opf
mv content.opf OEBPS/content.opf
chmod 644 OEBPS/content.opf
touch -d '2026-11-29 00:00:00 UTC' OEBPS/content.opf
TZ=UTC zip -q -X "$TMP/out/rocs-handbook-ru.epub" OEBPS/content.opf
cp "$TMP/out/rocs-handbook-ru.epub" "$OUT/rocs-handbook-ru.epub"
test -s "$OUT/rocs-handbook-ru.epub"
