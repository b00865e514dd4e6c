#!/bin/sh
# Set BT's document: the whole Russian help of Cheese 43, GNOME's webcam program, whose Russian name is
# «Фотовидеобудка Cheese» (Mallard, cheese-common 43.0-1, /usr/share/help/ru/cheese, 14 pages), rendered to HTML by
# yelp-build one file per page, joined by pandoc into one HTML page in the order of the guide (the index page, then the
# pages in the order of its links), then opened by AbiWord and saved as one Rich Text file (`abiword --to=rtf`), where
# the earlier RTF files came from pandoc, LibreOffice Writer and calibre. pandoc's filter drops yelp's breadcrumb line,
# the credits at the foot of each page (the same authors, translators and licence on every page) and the pictures, and
# keeps the text of the links without their targets; each page's title, sections, steps, lists and its «Дополнительная
# информация» link list stay. pandoc writes the page as HTML 4 (`-t html4`) with a template of this script's own whose
# head declares the encoding with an http-equiv line: AbiWord's HTML import would not open pandoc's HTML5 page (with
# `<meta charset>` and `<section>`), «could not open the file». AbiWord's RTF writer makes each heading, paragraph, step
# and list item an RTF paragraph with a style of its own («Heading 1» … for the titles and sections), writes the
# Cyrillic as \uN escapes, and gives bulleted items a \listtext group with the bullet; the numbers of numbered steps are
# not in the text.
# Reproducibility. Neither yelp-build's pages nor pandoc's page hold a date or an id, and AbiWord writes no date into
# the RTF (its \info group holds the title alone): two plain runs gave the same bytes. AbiWord reads and writes a
# profile of the user's (~/.config/abiword) at each run, so the script runs it with HOME in the temporary folder. Two
# runs give the same bytes, also from a copy of the source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends cheese-common yelp-tools pandoc abiword
# Made with Debian 12's cheese-common 43.0-1 (its .deb unpacked under /tmp; SRC may name such a copy), yelp-tools
# 42.1-2, yelp-xsl 42.1-2+deb12u1, pandoc 2.17.1.1-2~deb12u1 and AbiWord 3.0.5 (abiword 3.0.5~dfsg-3.2).
set -eu
YELP_BUILD=${YELP_BUILD:-yelp-build}
PANDOC=${PANDOC:-pandoc}
ABIWORD=${ABIWORD:-abiword}
SRC=${SRC:-/usr/share/help/ru/cheese}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/pages" "$TMP/html" "$TMP/out" "$TMP/home"
"$YELP_BUILD" html -o "$TMP/pages" "$SRC"/*.page
cat > "$TMP/filter.lua" <<'LUA'
function Div(el)
  if el.classes:includes("trails") or el.classes:includes("about") then return {} end
end
function Image(el) return {} end
function Link(el) return el.content end
function Meta(meta)
  meta.title = pandoc.MetaInlines({pandoc.Str("Справка"), pandoc.Space(), pandoc.Str("Cheese")})
  return meta
end
LUA
cat > "$TMP/page.html" <<'HTML'
<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">
<html lang="ru">
<head>
<meta http-equiv="Content-Type" content="text/html; charset=utf-8">
<title>$title$</title>
</head>
<body>
$body$
</body>
</html>
HTML
cd "$TMP/pages"
pages="index.html $(grep -o 'href="[^"#]*\.html' index.html | sed 's/href="//' | grep -v '^index\.html$' | awk '!seen[$0]++')"
[ "$(echo $pages | wc -w)" -eq 14 ] || { echo "expected 14 pages, found $(echo $pages | wc -w)" >&2; exit 1; }
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -f html -s --template="$TMP/page.html" -t html4 \
  -o "$TMP/html/cheese-help-ru.html" $pages
HOME="$TMP/home" "$ABIWORD" --to=rtf -o "$TMP/out/cheese-help-ru.rtf" "$TMP/html/cheese-help-ru.html" \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
grep -q 'could not open' "$TMP/log" && { cat "$TMP/log"; exit 1; }
cp "$TMP/out/cheese-help-ru.rtf" "$OUT/cheese-help-ru.rtf"
test -s "$OUT/cheese-help-ru.rtf"
