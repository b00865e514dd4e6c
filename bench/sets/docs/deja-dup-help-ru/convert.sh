#!/bin/sh
# Set BM's document: the whole Russian help of Déjà Dup 44, GNOME's backup program («Справка по резервному копированию»;
# Mallard, deja-dup 44.0-2, /usr/share/help/ru/deja-dup, 7 pages), rendered to HTML by yelp-build one file per page,
# joined by pandoc into one HTML page in the order of the guide (the index page, then the pages in the order of its
# links), then converted by calibre into one Word document (`ebook-convert … .docx`), where the earlier DOCX files were
# written by LibreOffice Writer, pandoc and AbiWord. pandoc's filter drops yelp's breadcrumb line, the credits at the
# foot of each page (the same author, translators and licence on every page) and the pictures, and keeps the text of the
# links without their targets; each page's title, text and its «Дополнительная информация» link list stay. calibre's
# DOCX writer turns each heading and paragraph into a Word paragraph with a style of its own («Heading 1» for the pages'
# titles, «Heading 2» and «Heading 3» for their sections), list items into numbered or bulleted paragraphs (the bullet
# or number is numbering, not text) and the lines of a command example into one paragraph with line breaks; it inserts
# no table of contents, since the page gives calibre none.
# Reproducibility. calibre writes the time of the run into every zip entry and, from Python's hash-ordered sets, writes
# the styles of styles.xml and the types of [Content_Types].xml in an order that changes from run to run (two plain runs
# differed there and nowhere else; calibre writes the dates of docProps/core.xml as a bare «Z», and no random id). The
# script runs calibre with PYTHONHASHSEED=0 and under faketime with the wall clock stopped at 2026-11-29 00:00:00 UTC
# (`faketime -f`, an absolute time without «@»; the monotonic clock left real by FAKETIME_DONT_FAKE_MONOTONIC=1), with
# calibre's configuration and runtime folders in the temporary one, and hands it the title and the language in an OPF
# file (`--from-opf`), so that they do not depend on the locale. With that two runs give the same bytes, also from a
# copy of the source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends deja-dup yelp-tools pandoc calibre faketime
# Made with Debian 12's deja-dup 44.0-2 (its .deb unpacked under /tmp; SRC may name such a copy), yelp-tools 42.1-2,
# yelp-xsl 42.1-2+deb12u1, pandoc 2.17.1.1-2~deb12u1, calibre 6.13.0 (calibre 6.13.0+repack-2+deb12u10) and faketime /
# libfaketime 0.9.10-2.1.
set -eu
YELP_BUILD=${YELP_BUILD:-yelp-build}
PANDOC=${PANDOC:-pandoc}
EBOOK_CONVERT=${EBOOK_CONVERT:-ebook-convert}
SRC=${SRC:-/usr/share/help/ru/deja-dup}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/pages" "$TMP/html" "$TMP/out" "$TMP/calibre" "$TMP/runtime"
chmod 700 "$TMP/runtime"
"$YELP_BUILD" html -o "$TMP/pages" "$SRC"/*.page
cat > "$TMP/filter.lua" <<'LUA'
function Div(el)
  if el.classes:includes("trails") or el.classes:includes("about") then return {} end
end
function Image(el) return {} end
function Link(el) return el.content end
LUA
cat > "$TMP/page.html" <<'HTML'
<!DOCTYPE html>
<html lang="ru">
<head>
<meta charset="utf-8">
<title>$title$</title>
</head>
<body>
$body$
</body>
</html>
HTML
cat > "$TMP/metadata.opf" <<'OPF'
<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="2.0">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:opf="http://www.idpf.org/2007/opf">
    <dc:title>Справка по резервному копированию</dc:title>
    <dc:language>ru</dc:language>
  </metadata>
</package>
OPF
cd "$TMP/pages"
pages="index.html $(grep -o 'href="[^"#]*\.html' index.html | sed 's/href="//' | grep -v '^index\.html$' | awk '!seen[$0]++')"
[ "$(echo $pages | wc -w)" -eq 7 ] || { echo "expected 7 pages, found $(echo $pages | wc -w)" >&2; exit 1; }
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -f html -s --template="$TMP/page.html" -t html5 \
  --metadata title="Справка по резервному копированию" -o "$TMP/html/deja-dup-help-ru.html" $pages
PYTHONHASHSEED=0 CALIBRE_CONFIG_DIRECTORY="$TMP/calibre" XDG_RUNTIME_DIR="$TMP/runtime" \
  TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "2026-11-29 00:00:00" \
  "$EBOOK_CONVERT" "$TMP/html/deja-dup-help-ru.html" "$TMP/out/deja-dup-help-ru.docx" --from-opf "$TMP/metadata.opf" \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/deja-dup-help-ru.docx" "$OUT/deja-dup-help-ru.docx"
test -s "$OUT/deja-dup-help-ru.docx"
