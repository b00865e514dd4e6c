#!/bin/sh
# Set BR's document: the whole Russian help of gbrainy 2.4.6, GNOME's brain teaser game (logic puzzles, mental
# calculation, memory trainers and verbal analogies; «Справка gbrainy», Mallard, gbrainy 1:2.4.6-1,
# /usr/share/help/ru/gbrainy, 14 pages), rendered to HTML by yelp-build one file per page, then joined and written by
# pandoc as one standalone HTML page in the order of the guide (the index page, then the pages in the order of its
# links), with pandoc's own HTML5 template (`pandoc -s -t html5`: its title block, its style sheet and a generator
# line), where the earlier HTML documents were shipped as they are or written by yelp-build and the DocBook XSL
# stylesheets. pandoc's filter drops yelp's breadcrumb line, the credits at the foot of each page (the same author,
# translator and licence on every page) and the pictures (the game types' logos and the main window), and keeps the text
# of the links without their targets, which would point to the other pages; each page's title, sections, steps, lists,
# the table of the games' times and its «Дополнительная информация» and «Смотрите также» link lists stay.
# pandoc keeps yelp's divs and sections with their classes, and writes each paragraph, list item, table cell or heading
# on one line of the file (--wrap=none; by default it wraps the text at 72 columns).
# Reproducibility. Neither yelp-build's pages nor pandoc's page hold a date or an id, and pandoc's template is built
# into it: two plain runs gave the same bytes. With LC_ALL=C pandoc read the title given on its command line in the
# locale's encoding and wrote it garbled, so the script sets the title and the language in the filter, which pandoc
# reads as UTF-8 (a metadata file does not do: the title of the last page read, «Лицензия», takes its place). Two runs
# give the same bytes, also from a copy of the source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends gbrainy yelp-tools pandoc
# Made with Debian 12's gbrainy 1:2.4.6-1 (its .deb unpacked under /tmp; SRC may name such a copy), yelp-tools 42.1-2,
# yelp-xsl 42.1-2+deb12u1 and pandoc 2.17.1.1-2~deb12u1.
set -eu
YELP_BUILD=${YELP_BUILD:-yelp-build}
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/help/ru/gbrainy}
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
function Link(el) return el.content end
function Meta(meta)
  meta.title = pandoc.MetaInlines({pandoc.Str("Справка"), pandoc.Space(), pandoc.Str("gbrainy")})
  meta.lang = pandoc.MetaString("ru")
  return meta
end
LUA
cd "$TMP/pages"
pages="index.html $(grep -o 'href="[^"#]*\.html' index.html | sed 's/href="//' | awk '!seen[$0]++')"
[ "$(echo $pages | wc -w)" -eq 14 ] || { echo "expected 14 pages, found $(echo $pages | wc -w)" >&2; exit 1; }
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -f html -s -t html5 --wrap=none \
  -o "$TMP/gbrainy-help-ru.html" $pages
cp "$TMP/gbrainy-help-ru.html" "$OUT/gbrainy-help-ru.html"
test -s "$OUT/gbrainy-help-ru.html"
