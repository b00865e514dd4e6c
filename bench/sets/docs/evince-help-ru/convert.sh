#!/bin/sh
# Set R's document: the whole Russian help of the GNOME document viewer Evince 43.1 (Mallard,
# evince-common 43.1-2+deb12u1, /usr/share/help/ru/evince), rendered to HTML by yelp-build and
# joined by pandoc into one PPTX, the guide page index.html first, then the pages in name order
# (C locale); pandoc makes one slide per page (its title the slide's title).
#   apt-get install -y --no-install-recommends evince-common yelp-tools pandoc
# Made with Debian 12's yelp-tools 42.1-2 and pandoc 2.17.1.1-2~deb12u1; SRC may name an unpacked copy
# of the help (the set was made from evince-common's .deb unpacked under /tmp). The PPTX is not
# byte-reproducible (zip timestamps), so the file the set was written on is committed beside this script.
set -e
PANDOC=${PANDOC:-pandoc}
YELP_BUILD=${YELP_BUILD:-yelp-build}
SRC=${SRC:-/usr/share/help/ru/evince}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
# yelp-build exits 1 on a missing figure (figures/search-not-found.png); the pages are written all the same
$YELP_BUILD html -o "$TMP" "$SRC"/*.page || test -f "$TMP/index.html"
cat > "$TMP/filter.lua" <<'LUA'
function Div(el)
  if el.classes:includes("trails") then return {} end
  return el.content  -- unwrap yelp's nested divs, so that each page title is a top-level heading
end
function Image(el) return {} end
LUA
pages="$TMP/index.html $(cd "$TMP" && ls *.html | grep -v '^index\.html$' | LC_ALL=C sort | sed "s|^|$TMP/|")"
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -f html -t pptx --slide-level=1 --metadata lang=ru \
  --metadata title="Справка Evince 43.1" -o "$OUT/evince-help-ru.pptx" $pages
rm -r "$TMP"
