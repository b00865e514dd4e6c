#!/bin/sh
# Set BS's document: chapter 2 «Использование Skrooge» of the Russian handbook of Skrooge, KDE's personal finance
# manager («Руководство Skrooge»), from the DocBook source that skrooge-common ships
# (/usr/share/doc/HTML/ru/skrooge/index.docbook), built into one HTML page of that chapter by xsltproc with the standard
# DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no tables of contents, rootid=using-skrooge, so that the
# stylesheets read the whole book and write chapter 2 alone), its <img> tags removed by sed (the chapter shows 44
# screenshots and 13 small pictures of buttons, and the Russian folder holds no pictures), converted to LaTeX by pandoc
# with a template of this script's own, typeset by LaTeX into a DVI file, turned into PostScript by dvips and written
# as one PDF by Ghostscript (ps2pdf), where the earlier PDFs came from pdfTeX, xdvipdfmx, LibreOffice, WeasyPrint,
# LuaTeX, Chromium, wkhtmltopdf, AbiWord through cairo, MuPDF and HTMLDOC.
# The template sets the article class at 11 points on A4 paper with 2 cm margins, the T2A encoding with Russian
# hyphenation (babel), paragraphs without indent and with space between them, headings without numbers, and hyperref
# for the title of the PDF and its links (hidden). The fonts are the CM-Super Type 1 fonts (cm-super), which dvips
# embeds and Ghostscript writes as subsets with Unicode maps, so pdftotext reads real Cyrillic; LaTeX justifies the
# text and hyphenates words at line ends, and the page number stands at the foot of each page.
# KDE's DTD and entities resolve through the XML catalog of kdoctools5; nothing is fetched from the network. LaTeX runs
# three times (the tables' column widths settle on the second run), with HOME in the temporary folder, so that the
# font metrics mktextfm makes for the T2A fonts go there and not into the user's ~/.texlive2022.
# Reproducibility. Ghostscript writes the creation and modification dates into the PDF and makes the file id from the
# output file's name and that date, so two plain runs differed in both. Ghostscript takes the date from
# SOURCE_DATE_EPOCH when it is set, so the script sets it to 2026-11-29 00:00:00 UTC (with FORCE_SOURCE_DATE=1, which
# also fixes the date that LaTeX and dvips write into the DVI and PostScript files) and has ps2pdf write to a bare file
# name in the temporary folder, so that the folder's random name does not enter the id. Two runs give the same bytes,
# also from a copy of the source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends skrooge-common kdoctools5 docbook-xsl docbook-xml xsltproc pandoc \
#     texlive-latex-recommended texlive-lang-cyrillic cm-super ghostscript
# Made with Debian 12's skrooge-common 2.29.0-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), pandoc
# 2.17.1.1-2~deb12u1, TeX Live 2022 (texlive-binaries 2022.20220321.62855-5.1+deb12u2: pdfTeX 1.40.24 in DVI mode,
# dvips 2022.1; texlive-latex-base and texlive-latex-recommended 2022.20230122-3, texlive-lang-cyrillic
# 2022.20230122-1), cm-super 0.3.4-17 and Ghostscript 10.00.0 (ghostscript 10.0.0~dfsg-11+deb12u9).
set -eu
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/doc/HTML/ru/skrooge}
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
cat > "$TMP/template.tex" <<'TEX'
\documentclass[a4paper,11pt]{article}
\usepackage[T2A]{fontenc}
\usepackage[utf8]{inputenc}
\usepackage{textcomp}
\usepackage[russian]{babel}
\usepackage[margin=2cm]{geometry}
\usepackage{longtable,booktabs,array,calc}
\usepackage{url}
\usepackage[hidelinks]{hyperref}
\hypersetup{pdftitle={Глава 2. Использование Skrooge},pdfsubject={Руководство Skrooge},pdflang={ru}}
\urlstyle{same}
\providecommand{\tightlist}{\setlength{\itemsep}{0pt}\setlength{\parskip}{0pt}}
\setlength{\parindent}{0pt}
\setlength{\parskip}{6pt plus 2pt minus 1pt}
\setlength{\emergencystretch}{3em}
\setcounter{secnumdepth}{-\maxdimen}
\begin{document}
$body$
\end{document}
TEX
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet --stringparam generate.toc '' --stringparam rootid using-skrooge \
  -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook"
n=$(grep -o '<div class="chapter"' "$TMP/page.html" | wc -l)
[ "$n" -eq 1 ] || { echo "expected 1 chapter, found $n" >&2; exit 1; }
mkdir "$TMP/tex" "$TMP/out" "$TMP/home"
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/skrooge-handbook-ru.html"
"$PANDOC" -f html -t latex -s --template="$TMP/template.tex" -o "$TMP/tex/skrooge-handbook-ru.tex" \
  "$TMP/skrooge-handbook-ru.html"
export SOURCE_DATE_EPOCH=1795910400 FORCE_SOURCE_DATE=1 HOME="$TMP/home"
cd "$TMP/tex"
for run in 1 2 3; do
  latex -interaction=nonstopmode -halt-on-error skrooge-handbook-ru.tex > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
done
dvips -q skrooge-handbook-ru.dvi -o skrooge-handbook-ru.ps > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
cd "$TMP/out"
ps2pdf ../tex/skrooge-handbook-ru.ps skrooge-handbook-ru.pdf > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/skrooge-handbook-ru.pdf" "$OUT/skrooge-handbook-ru.pdf"
test -s "$OUT/skrooge-handbook-ru.pdf"
