#!/bin/sh
# Set AT's document: the whole Russian handbook of KInfoCenter, KDE Plasma's system information centre
# («KInfoCenter», release line «Plasma 5.12»), from the DocBook source that kinfocenter ships
# (/usr/share/doc/HTML/ru/kinfocenter/index.docbook, beside KDE's own rendering index.cache.bz2), typeset by LaTeX:
# dblatex with its XeTeX backend (`dblatex -b xetex`: its own XSL stylesheets write the LaTeX, with fontspec's DejaVu
# Serif, Sans and Sans Mono and babel's Russian, and XeLaTeX typesets it through xdvipdfmx), as set AP's script.
# dblatex's defaults are kept: A4, a title page, the collaborators and (empty) revision-history tables, a table of
# contents, the running head and «N / M» page numbers. KDE's DTD and entities resolve through the XML catalog of
# kdoctools5; nothing is fetched from the network (xsltproc --nonet). The one picture the handbook names
# (kinfocenter.png) is not shipped in the Russian folder and is left out (dblatex warns «Image '…' not found»); its
# caption stays.
#   apt-get install -y --no-install-recommends kinfocenter kdoctools5 docbook-xml dblatex texlive-xetex \
#     texlive-lang-cyrillic fonts-dejavu-core fonts-dejavu-extra
# Made with Debian 12's kinfocenter 4:5.27.5-2 (its .deb unpacked under /tmp; SRC may name such a copy),
# kdoctools5 5.103.0-1, docbook-xml 4.5-12, dblatex 0.3.12py3-2 (xsltproc: libxml 2.9.14, libxslt 1.1.35),
# texlive-xetex 2022.20230122-3 and texlive-binaries 2022.20220321.62855-5.1+deb12u2 (XeTeX 3.141592653-2.6-0.999994,
# xdvipdfmx 20211117), texlive-latex-extra 2022.20230122-4, texlive-lang-cyrillic 2022.20230122-1 and
# fonts-dejavu-core / fonts-dejavu-extra 2.37-6. With SOURCE_DATE_EPOCH and FORCE_SOURCE_DATE fixed as below,
# two runs give the same bytes.
set -eu
SRC=${SRC:-/usr/share/doc/HTML/ru/kinfocenter}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SOURCE_DATE_EPOCH=1795824000 FORCE_SOURCE_DATE=1 \
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  dblatex -b xetex -x --nonet -o "$OUT/kinfocenter-handbook-ru.pdf" "$SRC/index.docbook" \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
test -s "$OUT/kinfocenter-handbook-ru.pdf"
