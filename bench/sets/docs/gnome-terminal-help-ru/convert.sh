#!/bin/sh
# Set S's documents: the whole Russian help of GNOME Terminal 3.46 (Mallard, gnome-terminal-data
# 3.46.8-1, /usr/share/help/ru/gnome-terminal), rendered to HTML by yelp-build and rewritten by pandoc
# as one plain standalone HTML page per help page (30 pages), yelp's breadcrumb line and the pictures
# left out, no line wrapping (so that each paragraph or list item is one line of the file).
#   apt-get install -y --no-install-recommends gnome-terminal-data yelp-tools pandoc
# Made with Debian 12's yelp-tools 42.1-2 and pandoc 2.17.1.1-2~deb12u1; SRC may name an unpacked copy
# of the help (the set was made from gnome-terminal-data's .deb unpacked under /tmp). Two runs gave the
# same bytes; the pages are committed beside this script all the same.
set -e
PANDOC=${PANDOC:-pandoc}
YELP_BUILD=${YELP_BUILD:-yelp-build}
SRC=${SRC:-/usr/share/help/ru/gnome-terminal}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
$YELP_BUILD html -o "$TMP" "$SRC"/*.page
cat > "$TMP/filter.lua" <<'LUA'
function Div(el)
  if el.classes:includes("trails") then return {} end
end
function Image(el) return {} end
LUA
for f in "$TMP"/*.html; do
  "$PANDOC" --lua-filter="$TMP/filter.lua" --wrap=none -s -f html -t html5 --metadata lang=ru \
    -o "$OUT/$(basename "$f")" "$f"
done
rm -r "$TMP"
