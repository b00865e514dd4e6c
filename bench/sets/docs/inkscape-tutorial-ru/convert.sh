#!/bin/sh
# Set CA's document: the Russian basic tutorial of Inkscape, the vector graphics editor («Руководство | Основы», shown
# in the program as Справка → Учебник → «Inkscape: Основы»), from the SVG that inkscape-tutorials ships
# (/usr/share/inkscape/tutorials/tutorial-basic.ru.svg). The tutorial is a drawing: the project made it from its DocBook
# source with its own tutorial-svg.xsl, each paragraph an SVG <text> flowed into a shape, beside the pictures and the
# shapes to practise on; the DocBook is not shipped. xsltproc reads the 85 <text> elements in document order with a
# stylesheet of the script's own and writes one XHTML page: the title (font size 16) as <h1>, the section headings (bold
# sans) as <h2> with ids s1…s15, each «•» with the text after it as a list item, every other text as a paragraph (the
# introduction, the lessons and the three lines of credits at the foot), bold and italic runs as <b> and <i>, the menu
# names (blue) as plain text; a second stylesheet writes a table of contents (NCX) of the fifteen sections with fixed
# ids, and an OPF package holds the two with the title «Inkscape: Основы», the language ru and a fixed uuid. calibre
# converts the package into one EPUB book (`ebook-convert … .epub`), where the earlier EPUB books came from the DocBook
# XSL stylesheets, pandoc, LibreOffice Writer and yelp-build: EPUB 2, a new file before each <h1> and <h2> (16 files,
# inkscape-tutorial-ru_split_000.xhtml with the title and the introduction, then one a section), its own style sheets,
# the NCX from the package's, no cover (`--no-default-epub-cover`).
# Reproducibility. calibre writes the run's time into the book's metadata (calibre:timestamp), gives each entry of the
# table of contents a random id unless the input's table of contents names one, and zips the files in the order its
# temporary folder lists them, each with the time it was written. The package's NCX names the ids, and calibre runs
# under faketime with the wall clock stopped at 2026-11-29 00:00:00 UTC (`faketime -f`, an absolute time without «@»;
# the monotonic clock left real by FAKETIME_DONT_FAKE_MONOTONIC=1), with its configuration and runtime folders and HOME
# in the temporary one; faketime does not reach the files' times, so python3's zipfile writes the book's entries again,
# unchanged and with calibre's compression, in a fixed order (mimetype first, then the names sorted) and with that time.
# With that two runs give the same bytes, also from a copy of the source in another folder and with LC_ALL=C (Python's
# string hashes change nothing: runs with different hash seeds gave the same bytes).
#   apt-get install -y --no-install-recommends inkscape-tutorials xsltproc calibre faketime python3
# Made with Debian 12's inkscape-tutorials 1.2.2-2+deb12u1 (its .deb unpacked under /tmp; SRC may name such a copy),
# xsltproc (libxml 2.9.14, libxslt 1.1.35), calibre 6.13.0 (calibre 6.13.0+repack-2+deb12u10), faketime / libfaketime
# 0.9.10-2.1 and python3 3.11.2.
set -eu
EBOOK_CONVERT=${EBOOK_CONVERT:-ebook-convert}
SRC=${SRC:-/usr/share/inkscape/tutorials}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BOOK_ID=3f6d2a1e-8c4b-4e7a-9b1d-5a2c7e9f0b64
mkdir "$TMP/book" "$TMP/out" "$TMP/calibre" "$TMP/runtime" "$TMP/home"
chmod 700 "$TMP/runtime"
cat > "$TMP/page.xsl" <<'XSL'
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform" xmlns:svg="http://www.w3.org/2000/svg"
    xmlns="http://www.w3.org/1999/xhtml" exclude-result-prefixes="svg">
  <xsl:output method="xml" encoding="UTF-8" indent="no"/>
  <xsl:strip-space elements="*"/>
  <xsl:preserve-space elements="svg:text svg:tspan"/>
  <xsl:template match="/">
    <html lang="ru" xml:lang="ru">
      <head><title>Inkscape: Основы</title></head>
      <body><xsl:text>&#10;</xsl:text><xsl:apply-templates select="//svg:text"/></body>
    </html>
  </xsl:template>
  <xsl:template match="svg:text[contains(@style, 'font-size:16;')]">
    <h1><xsl:value-of select="."/></h1><xsl:text>&#10;</xsl:text>
  </xsl:template>
  <xsl:template match="svg:text[contains(@style, 'font-weight:bold')]">
    <h2 id="s{count(preceding::svg:text[contains(@style, 'font-weight:bold')]) + 1}"><xsl:value-of select="."/></h2>
    <xsl:text>&#10;</xsl:text>
  </xsl:template>
  <xsl:template match="svg:text[normalize-space() = '&#8226;']">
    <xsl:if test="not(preceding::svg:text[2][normalize-space() = '&#8226;'])">
      <ul><xsl:apply-templates select="." mode="item"/></ul><xsl:text>&#10;</xsl:text>
    </xsl:if>
  </xsl:template>
  <xsl:template match="svg:text" mode="item">
    <li><xsl:apply-templates select="following::svg:text[1]/node()"/></li>
    <xsl:apply-templates select="following::svg:text[2][normalize-space() = '&#8226;']" mode="item"/>
  </xsl:template>
  <xsl:template match="svg:text[preceding::svg:text[1][normalize-space() = '&#8226;']]" priority="1"/>
  <xsl:template match="svg:text">
    <p><xsl:apply-templates/></p><xsl:text>&#10;</xsl:text>
  </xsl:template>
  <xsl:template match="svg:tspan[contains(@style, 'font-weight:bold')]"><b><xsl:apply-templates/></b></xsl:template>
  <xsl:template match="svg:tspan[contains(@style, 'font-style:italic')]"><i><xsl:apply-templates/></i></xsl:template>
  <xsl:template match="svg:tspan"><xsl:apply-templates/></xsl:template>
</xsl:stylesheet>
XSL
cat > "$TMP/ncx.xsl" <<XSL
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform" xmlns:svg="http://www.w3.org/2000/svg"
    xmlns="http://www.daisy.org/z3986/2005/ncx/" exclude-result-prefixes="svg">
  <xsl:output method="xml" encoding="UTF-8" indent="yes"/>
  <xsl:template match="/">
    <ncx version="2005-1">
      <head><meta name="dtb:uid" content="$BOOK_ID"/></head>
      <docTitle><text>Inkscape: Основы</text></docTitle>
      <navMap>
        <xsl:for-each select="//svg:text[contains(@style, 'font-weight:bold')]">
          <navPoint id="section-{position()}" playOrder="{position()}">
            <navLabel><text><xsl:value-of select="."/></text></navLabel>
            <content src="inkscape-tutorial-ru.xhtml#s{position()}"/>
          </navPoint>
        </xsl:for-each>
      </navMap>
    </ncx>
  </xsl:template>
</xsl:stylesheet>
XSL
cat > "$TMP/book/book.opf" <<OPF
<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="2.0" unique-identifier="uuid_id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:opf="http://www.idpf.org/2007/opf">
    <dc:identifier opf:scheme="uuid" id="uuid_id">$BOOK_ID</dc:identifier>
    <dc:title>Inkscape: Основы</dc:title>
    <dc:language>ru</dc:language>
  </metadata>
  <manifest>
    <item id="page" href="inkscape-tutorial-ru.xhtml" media-type="application/xhtml+xml"/>
    <item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>
  </manifest>
  <spine toc="ncx"><itemref idref="page"/></spine>
</package>
OPF
xsltproc --nonet -o "$TMP/book/inkscape-tutorial-ru.xhtml" "$TMP/page.xsl" "$SRC/tutorial-basic.ru.svg"
xsltproc --nonet -o "$TMP/book/toc.ncx" "$TMP/ncx.xsl" "$SRC/tutorial-basic.ru.svg"
page="$TMP/book/inkscape-tutorial-ru.xhtml"
[ "$(grep -o '<h2 ' "$page" | wc -l)" -eq 15 ] || { echo "expected 15 sections" >&2; exit 1; }
[ "$(grep -o '<li>' "$page" | wc -l)" -eq 4 ] || { echo "expected 4 list items" >&2; exit 1; }
[ "$(grep -o '<p>' "$page" | wc -l)" -eq 61 ] || { echo "expected 61 paragraphs" >&2; exit 1; }
HOME="$TMP/home" CALIBRE_CONFIG_DIRECTORY="$TMP/calibre" XDG_RUNTIME_DIR="$TMP/runtime" TZ=UTC \
  FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "2026-11-29 00:00:00" \
  "$EBOOK_CONVERT" "$TMP/book/book.opf" "$TMP/out/calibre.epub" --from-opf "$TMP/book/book.opf" \
  --no-default-epub-cover > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
python3 - "$TMP/out/calibre.epub" "$TMP/out/inkscape-tutorial-ru.epub" <<'PY'
import sys, zipfile
source, target = sys.argv[1:]
with zipfile.ZipFile(source) as book:
    entries = sorted(book.infolist(), key=lambda i: (i.filename != "mimetype", i.filename))
    assert entries[0].filename == "mimetype" and entries[0].compress_type == zipfile.ZIP_STORED
    with zipfile.ZipFile(target, "w") as out:
        for entry in entries:
            info = zipfile.ZipInfo(entry.filename, date_time=(2026, 11, 29, 0, 0, 0))
            info.compress_type = entry.compress_type
            info.external_attr = (0o40755 << 16 | 0x10) if entry.is_dir() else 0o100644 << 16
            out.writestr(info, book.read(entry))
PY
cp "$TMP/out/inkscape-tutorial-ru.epub" "$OUT/inkscape-tutorial-ru.epub"
test -s "$OUT/inkscape-tutorial-ru.epub"
