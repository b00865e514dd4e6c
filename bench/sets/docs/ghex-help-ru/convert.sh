#!/bin/sh
# Set BE's document: the whole Russian help of GHex 43, GNOME's hex editor («Справка по GHex»; Mallard, ghex 43.1-1,
# /usr/share/help/ru/ghex, 11 pages), rendered to HTML by yelp-build one file per page and joined by pandoc into one
# plain text file (`-t plain --wrap=none`, so that each paragraph, list item or heading is one line) in the order of
# the guide: the index page, then the pages in the order of its links. pandoc's filter drops yelp's breadcrumb line,
# the credits at the foot of each page (the same copyright lines, authors and translators on every page) and the
# pictures; the links keep their text (the plain writer writes no targets). Each page's title, text and its
# «Дополнительная информация» link list stay.
# Reproducibility. Plain text holds no date or id; yelp-build's pages hold none either. Two runs give the same bytes,
# also from a copy of the source in another folder.
#   apt-get install -y --no-install-recommends ghex yelp-tools pandoc
# Made with Debian 12's ghex 43.1-1 (its .deb unpacked under /tmp; SRC may name such a copy), yelp-tools 42.1-2,
# yelp-xsl 42.1-2+deb12u1 and pandoc 2.17.1.1-2~deb12u1.
set -eu
YELP_BUILD=${YELP_BUILD:-yelp-build}
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/help/ru/ghex}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/pages"
"$YELP_BUILD" html -o "$TMP/pages" "$SRC"/*.page
cat > "$TMP/filter.lua" <<'LUA'
function Div(el)
  if el.classes:includes("trails") or el.classes:includes("about") then return {} end
end
function Image(el) return {} end
LUA
cd "$TMP/pages"
pages="index.html $(grep -o 'href="[^"#]*\.html' index.html | sed 's/href="//' | awk '!seen[$0]++')"
[ "$(echo $pages | wc -w)" -eq 11 ] || { echo "expected 11 pages, found $(echo $pages | wc -w)" >&2; exit 1; }
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -f html -t plain --wrap=none \
  -o "$OUT/ghex-help-ru.txt" $pages
test -s "$OUT/ghex-help-ru.txt"
