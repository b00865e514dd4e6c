#!/bin/sh
# Set BU's document: the first sixteen sections of chapter 2 «Использование Konversation» of the Russian handbook of
# Konversation, KDE's IRC client («Руководство пользователя Konversation»), from the DocBook source that
# konversation-data ships (/usr/share/doc/HTML/ru/konversation/index.docbook), transformed into XSL-FO by xsltproc with
# the standard DocBook XSL-FO stylesheets (fo/docbook.xsl, rootid=using-kapp, so that the stylesheets read the whole
# book and write chapter 2 alone) and laid out and written as one PDF by Apache FOP, where the earlier PDFs came from
# pdfTeX, xdvipdfmx, LibreOffice, WeasyPrint, LuaTeX, Chromium, wkhtmltopdf, AbiWord through cairo, MuPDF, HTMLDOC and
# Ghostscript.
# The stylesheet layer sets A4 paper, DejaVu Serif for the text, DejaVu Sans for the headings and DejaVu Sans Mono for
# commands, no hyphenation (the stylesheets' default would have FOP break words with the Russian patterns of
# libfop-java), FOP's extensions for the bookmarks, the callout numbers as plain text, and no table of contents. It
# gives the screenshots and the small pictures empty templates (the sixteen sections show 23 screenshots, 17 of them
# with callouts, and 11 small pictures, and the Russian folder holds none, only index.docbook and index.cache.bz2),
# and the same to sections 17-23 of the chapter (the URL catcher, the web browser, the marker lines, logging,
# Konversation's own commands, scripting and its reference), also in the modes that write the bookmarks and the named
# destinations; a link into what is not written keeps its text alone. FOP's configuration embeds the DejaVu TrueType
# fonts (fonts-dejavu-core and fonts-dejavu-extra) as subsets with Unicode maps, so pdftotext reads real Cyrillic,
# and turns FOP's font cache off. The script stops if FOP warns (an unresolved link, a missing font or picture) and
# checks that the sixteen sections are written and the seventeenth is not.
# KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the network.
# Reproducibility. FOP writes the creation date into the document information and the XMP metadata and makes the file
# id from it, so two plain runs differed in both. Debian's FOP takes the date from SOURCE_DATE_EPOCH, which the script
# sets to 2026-11-29 00:00:00 UTC, and writes to a bare file name in the temporary folder. FOP runs with HOME in the
# temporary folder (its wrapper reads ~/.foprc); Java takes the user's home from the system, not from HOME, so the
# script gives Java's user.home the temporary folder too, and turns off the performance data the JVM keeps under /tmp.
# Two runs give the same bytes, also from a copy of the source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends konversation-data kdoctools5 docbook-xsl docbook-xml xsltproc fop \
#     fonts-dejavu-core fonts-dejavu-extra
# Made with Debian 12's konversation-data 22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy),
# kdoctools5 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35),
# fop and libfop-java 1:2.8-2 (Apache FOP 2.8, libxmlgraphics-commons-java 2.8-2, on OpenJDK 17.0.15 from
# openjdk-17-jre-headless 17.0.15+6-1~deb12u1) and fonts-dejavu-core and fonts-dejavu-extra 2.37-6.
set -eu
FOP=${FOP:-fop}
SRC=${SRC:-/usr/share/doc/HTML/ru/konversation}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/fo.xsl" <<'XSL'
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">
  <xsl:import href="/usr/share/xml/docbook/stylesheet/docbook-xsl/fo/docbook.xsl"/>
  <xsl:param name="paper.type">A4</xsl:param>
  <xsl:param name="body.font.family">DejaVu Serif</xsl:param>
  <xsl:param name="sans.font.family">DejaVu Sans</xsl:param>
  <xsl:param name="title.font.family">DejaVu Sans</xsl:param>
  <xsl:param name="monospace.font.family">DejaVu Sans Mono</xsl:param>
  <xsl:param name="symbol.font.family">DejaVu Sans</xsl:param>
  <xsl:param name="dingbat.font.family">DejaVu Sans</xsl:param>
  <xsl:param name="hyphenate">false</xsl:param>
  <xsl:param name="fop1.extensions">1</xsl:param>
  <xsl:param name="callout.graphics">0</xsl:param>
  <xsl:param name="callout.unicode">0</xsl:param>
  <xsl:param name="generate.toc"></xsl:param>
  <xsl:template match="screenshot|mediaobject|inlinemediaobject"/>
  <xsl:template match="screenshot|mediaobject|inlinemediaobject" mode="fop1.foxdest"/>
  <xsl:template match="sect1[@id='urlcatcher' or @id='webbrowser' or @id='rememberlines'
                       or @id='logging' or @id='konvi-cmds' or @id='scripting' or @id='scripts_ref']"/>
  <xsl:template match="sect1[@id='urlcatcher' or @id='webbrowser' or @id='rememberlines'
                       or @id='logging' or @id='konvi-cmds' or @id='scripting' or @id='scripts_ref']" mode="bookmark"/>
  <xsl:template match="sect1[@id='urlcatcher' or @id='webbrowser' or @id='rememberlines'
                       or @id='logging' or @id='konvi-cmds' or @id='scripting' or @id='scripts_ref']"
                mode="fop1.foxdest"/>
  <xsl:template match="link[@linkend]">
    <xsl:variable name="target" select="key('id', @linkend)"/>
    <xsl:choose>
      <xsl:when test="$target/ancestor-or-self::chapter[@id='using-kapp']
                      and not($target/ancestor-or-self::sect1[@id='urlcatcher' or @id='webbrowser'
                      or @id='rememberlines' or @id='logging' or @id='konvi-cmds' or @id='scripting'
                      or @id='scripts_ref'])">
        <xsl:apply-imports/>
      </xsl:when>
      <xsl:otherwise><xsl:apply-templates/></xsl:otherwise>
    </xsl:choose>
  </xsl:template>
</xsl:stylesheet>
XSL
F=/usr/share/fonts/truetype/dejavu
font() {
  echo "<font kerning=\"yes\" embed-url=\"$F/$1.ttf\"><font-triplet name=\"$2\" style=\"$3\" weight=\"$4\"/></font>"
}
{
  echo '<?xml version="1.0" encoding="UTF-8"?>'
  echo '<fop version="1.0"><use-cache>false</use-cache><renderers><renderer mime="application/pdf"><fonts>'
  for fam in Serif Sans "Sans Mono"; do
    f=$(echo "$fam" | tr -d ' ')
    it=Oblique; [ "$fam" = Serif ] && it=Italic
    font "DejaVu$f" "DejaVu $fam" normal normal
    font "DejaVu$f-Bold" "DejaVu $fam" normal bold
    font "DejaVu$f-$it" "DejaVu $fam" italic normal
    font "DejaVu$f-Bold$it" "DejaVu $fam" italic bold
  done
  echo '</fonts></renderer></renderers></fop>'
} > "$TMP/fop.xconf"
FO="$TMP/konversation-handbook-ru.fo"
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet --stringparam rootid using-kapp -o "$FO" "$TMP/fo.xsl" "$SRC/index.docbook" 2> "$TMP/log" \
  || { cat "$TMP/log"; exit 1; }
for id in irc-basics dcc; do
  grep -q "id=\"$id\"" "$FO" || { echo "section $id not written" >&2; exit 1; }
done
if grep -q 'id="urlcatcher"' "$FO"; then echo "section urlcatcher written" >&2; exit 1; fi
mkdir "$TMP/out" "$TMP/home"
cd "$TMP/out"
SOURCE_DATE_EPOCH=1795910400 HOME="$TMP/home" JAVA_ARGS="-XX:-UsePerfData -Duser.home=$TMP/home" \
  "$FOP" -q -c "$TMP/fop.xconf" -fo "$FO" -pdf konversation-handbook-ru.pdf > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
if grep -q "WARN\|SEVERE" "$TMP/log"; then cat "$TMP/log" >&2; exit 1; fi
cp "$TMP/out/konversation-handbook-ru.pdf" "$OUT/konversation-handbook-ru.pdf"
test -s "$OUT/konversation-handbook-ru.pdf"
