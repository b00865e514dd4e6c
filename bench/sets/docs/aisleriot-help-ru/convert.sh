#!/bin/sh
# Set M's document: the Russian AisleRiot manual (DocBook 4.3, aisleriot 1:3.22.23-1) as one EPUB 3.
#   apt-get install -y --no-install-recommends aisleriot pandoc xsltproc
# PANDOC and XSLTPROC may name other binaries (the set was made with Debian 12's pandoc 2.17.1.1 and
# xsltproc 1.1.35 unpacked under /tmp). The EPUB is not byte-reproducible (a random uuid, dates),
# so the file the set was written on is committed beside this script.
set -e
PANDOC=${PANDOC:-pandoc}
XSLTPROC=${XSLTPROC:-xsltproc}
SRC=${SRC:-/usr/share/help/ru/aisleriot}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
cat > "$TMP/ident.xsl" <<'XSL'
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:template match="@*|node()"><xsl:copy><xsl:apply-templates select="@*|node()"/></xsl:copy></xsl:template>
</xsl:stylesheet>
XSL
# resolve the <xi:include> of the 91 game chapters, the glossary and the legal notice
# (no network: the DocBook DTD is not loaded; the entities the book uses are in its internal subset)
"$XSLTPROC" --nonet --novalid --xinclude -o "$TMP/aisleriot.xml" "$TMP/ident.xsl" "$SRC/index.docbook" 2>/dev/null
# the Russian help has no figures of its own (two PNGs of the English help are not used)
"$PANDOC" -f docbook -t epub3 --metadata lang=ru -o "$OUT/aisleriot.epub" "$TMP/aisleriot.xml"
rm -r "$TMP"
