#!/bin/sh
# Set BK's document: the whole Russian help of GNOME Web 43, GNOME's web browser formerly known as Epiphany («Справка
# по веб-браузеру»; Mallard, epiphany-browser-data 43.1-1, /usr/share/help/ru/epiphany, 22 pages), rendered to HTML by
# yelp-build one file per page, joined by pandoc into one HTML page in the order of the guide (the index page, then the
# pages in the order of its links), then dumped as one plain text file by w3m, the text-mode web browser (`w3m -dump`),
# where set BE's plain text was written by pandoc and sets O's and Z's are shipped as they are. pandoc's filter drops
# yelp's breadcrumb line, the credits at the foot of each page (the same translators and licence on every page) and the
# pictures, and keeps the text of the links without their targets; each page's title, text and its «Дополнительная
# информация» and «Смотрите также» link lists stay. w3m lays the page out as a terminal would show it: headings and
# paragraphs as lines of their own with a blank line between them, numbered steps as « 1. », list items as «  • »,
# the example of CSS as it is printed. It wraps text at the width of its screen, so the script gives it 4000 columns
# (`-cols 4000`): each paragraph, list item or heading is one line (the longest is under 700 characters).
# Reproducibility. Plain text holds no date or id, and neither yelp-build's pages nor pandoc's page hold one. w3m runs
# with its input and output charsets set (`-I UTF-8 -O UTF-8`) and HOME in the temporary folder, so no user settings
# of ~/.w3m are read. Two runs give the same bytes, also from a copy of the source in another folder and with
# LC_ALL=C.
#   apt-get install -y --no-install-recommends epiphany-browser-data yelp-tools pandoc w3m
# Made with Debian 12's epiphany-browser-data 43.1-1 (its .deb unpacked under /tmp; SRC may name such a copy; the
# pictures in its media folder are links to the C locale's), yelp-tools 42.1-2, yelp-xsl 42.1-2+deb12u1, pandoc
# 2.17.1.1-2~deb12u1 and w3m 0.5.3+git20230121-2.
set -eu
YELP_BUILD=${YELP_BUILD:-yelp-build}
PANDOC=${PANDOC:-pandoc}
W3M=${W3M:-w3m}
SRC=${SRC:-/usr/share/help/ru/epiphany}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/pages" "$TMP/home"
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
cd "$TMP/pages"
pages="index.html $(grep -o 'href="[^"#]*\.html' index.html | sed 's/href="//' | awk '!seen[$0]++')"
[ "$(echo $pages | wc -w)" -eq 22 ] || { echo "expected 22 pages, found $(echo $pages | wc -w)" >&2; exit 1; }
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -f html -s --template="$TMP/page.html" -t html5 \
  --metadata title="Справка по веб-браузеру" -o "$TMP/epiphany-help-ru.html" $pages
HOME="$TMP/home" "$W3M" -dump -cols 4000 -T text/html -I UTF-8 -O UTF-8 "$TMP/epiphany-help-ru.html" \
  > "$TMP/epiphany-help-ru.txt"
cp "$TMP/epiphany-help-ru.txt" "$OUT/epiphany-help-ru.txt"
test -s "$OUT/epiphany-help-ru.txt"
