#!/bin/sh
# Set BD's document: the whole Russian help of Totem 43, GNOME's video player («Видео»; Mallard, totem-common 43.0-2,
# /usr/share/help/ru/totem, 19 pages), rendered to HTML by yelp-build one file per page and joined by pandoc into one
# FictionBook 2 book (`-t fb2`) in the order of the guide: the index page, then the pages in the order of its links,
# each page a top-level section. pandoc's filter drops yelp's breadcrumb line, the credits at the foot of each page
# (the same authors, translators and licence on every page) and the pictures, keeps the text of the links between
# pages without their targets (they would point at HTML files the book does not hold), unwraps yelp's <div>s
# (pandoc's FB2 writer leaves out a heading nested in one, so the pages' titles and the link lists' headings would be
# lost) and makes each bare run of text a paragraph (the FB2 writer would otherwise put the index's links straight
# into a section, outside any <p>). Each page's title, text and its «More Information» and «See Also» link lists stay.
# pandoc's FB2 has no document id or date (as set P's): two runs give the same bytes, also from a copy of the source in
# another folder.
#   apt-get install -y --no-install-recommends totem-common yelp-tools pandoc
# Made with Debian 12's totem-common 43.0-2 (its .deb unpacked under /tmp; SRC may name such a copy), yelp-tools
# 42.1-2, yelp-xsl 42.1-2+deb12u1 and pandoc 2.17.1.1-2~deb12u1.
set -eu
YELP_BUILD=${YELP_BUILD:-yelp-build}
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/help/ru/totem}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/pages"
"$YELP_BUILD" html -o "$TMP/pages" "$SRC"/*.page
cat > "$TMP/filter.lua" <<'LUA'
function Div(el)
  if el.classes:includes("trails") or el.classes:includes("about") then return {} end
  return el.content
end
function Image(el) return {} end
function Link(el)
  if not el.target:match("^https?:") then return el.content end
end
function Plain(el) return pandoc.Para(el.content) end
LUA
cd "$TMP/pages"
pages="index.html $(grep -o 'href="[^"#]*\.html' index.html | sed 's/href="//' | awk '!seen[$0]++')"
[ "$(echo $pages | wc -w)" -eq 19 ] || { echo "expected 19 pages, found $(echo $pages | wc -w)" >&2; exit 1; }
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -f html -t fb2 --metadata lang=ru \
  --metadata title="Справка приложения «Видео» (Totem)" -o "$OUT/totem-help-ru.fb2" $pages
test -s "$OUT/totem-help-ru.fb2"
