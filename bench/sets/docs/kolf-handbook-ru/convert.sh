#!/bin/sh
# Set AQ's document: the whole Russian handbook of Kolf, KDE's miniature golf game («Руководство Kolf»), from the
# DocBook source that kolf ships (/usr/share/doc/HTML/ru/kolf/index.docbook, beside KDE's own rendering
# index.cache.bz2), typeset by LaTeX through pandoc: xmllint first resolves KDE's DTD and entities (&kolf;, the
# authors' and translators' names, the licence notices) through the XML catalog of kdoctools5 into one flat DocBook
# file (pandoc's DocBook reader reads no DTD), then pandoc reads it (-f docbook), writes LaTeX with its default
# template (the article class, here on A4 with 2.5 cm margins, DejaVu Serif, Sans and Sans Mono through fontspec,
# Russian through babel, pandoc's title block from the DocBook's bookinfo) and has XeLaTeX typeset it
# (--pdf-engine=xelatex, then xdvipdfmx). Nothing is fetched from the network (xmllint --nonet). pandoc's DocBook
# reader leaves out the bookinfo's abstract, translators and licence notice, the labels of notes and tips, and the
# <shortcut> elements (the menu reference's keys, such as Ctrl+N).
#   apt-get install -y --no-install-recommends kolf kdoctools5 docbook-xml libxml2-utils pandoc texlive-xetex \
#     texlive-latex-recommended texlive-latex-extra texlive-lang-cyrillic fonts-dejavu-core fonts-dejavu-extra
# Made with Debian 12's kolf 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xml 4.5-12, xmllint (libxml2-utils 2.9.14+dfsg-1.3~deb12u6), pandoc 2.17.1.1-2~deb12u1,
# texlive-xetex 2022.20230122-3 and texlive-binaries 2022.20220321.62855-5.1+deb12u2 (XeTeX 3.141592653-2.6-0.999994,
# xdvipdfmx 20211117), texlive-latex-recommended 2022.20230122-3, texlive-latex-extra 2022.20230122-4 (xurl and
# upquote, which pandoc's template loads when present), texlive-lang-cyrillic 2022.20230122-1 and
# fonts-dejavu-core / fonts-dejavu-extra 2.37-6. xdvipdfmx derives the PDF's trailer /ID from the path of pandoc's
# temporary folder, which changes from run to run; a \special on the first page (pdf:trailerid) sets it to the MD5
# of the flat DocBook instead, and with SOURCE_DATE_EPOCH and FORCE_SOURCE_DATE fixed as below two runs give the
# same bytes.
set -eu
SRC=${SRC:-/usr/share/doc/HTML/ru/kolf}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xmllint --nonet --loaddtd --noent --dropdtd --encode UTF-8 "$SRC/index.docbook" > "$TMP/kolf.xml"
ID=$(md5sum < "$TMP/kolf.xml" | cut -c1-32)
printf '\\AddToHook{shipout/firstpage}{\\special{pdf:trailerid [<%s> <%s>]}}\n' "$ID" "$ID" > "$TMP/id.tex"
cd "$TMP"
SOURCE_DATE_EPOCH=1795824000 FORCE_SOURCE_DATE=1 \
  pandoc -s -f docbook --resource-path="$TMP" --pdf-engine=xelatex -M lang=ru \
  -V papersize=a4 -V geometry:margin=2.5cm -V mainfont="DejaVu Serif" -V sansfont="DejaVu Sans" \
  -V monofont="DejaVu Sans Mono" -H "$TMP/id.tex" -o "$OUT/kolf-handbook-ru.pdf" "$TMP/kolf.xml" \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
test -s "$OUT/kolf-handbook-ru.pdf"
