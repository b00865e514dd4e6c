#!/bin/sh
# Set N's documents: five topics of the Russian GNOME desktop help (Mallard, gnome-user-docs 43.0-2),
# rendered to HTML by yelp-build and joined into one ODT per topic by pandoc.
#   apt-get install -y --no-install-recommends gnome-user-docs yelp-tools pandoc
# YELP_BUILD and PANDOC may name other binaries (the set was made with Debian 12's yelp-tools 42.1,
# yelp-xsl 42.1, xsltproc 1.1.35 and pandoc 2.17.1.1 unpacked under /tmp, yelp-build run by a
# Python with lxml). The ODT files are not byte-reproducible (zip timestamps), so the files the set
# was written on are committed beside this script.
set -e
PANDOC=${PANDOC:-pandoc}
YELP_BUILD=${YELP_BUILD:-yelp-build}
SRC=${SRC:-/usr/share/help/ru/gnome-help}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
$YELP_BUILD html -o "$TMP" "$SRC"/*.page
# drop yelp's breadcrumb line («Справка » Аппаратное обеспечение » Электропитание »), repeated on
# every page; everything else on the page (title, text, «Ещё в разделе…» links) is kept
cat > "$TMP/notrails.lua" <<'LUA'
function Div(el)
  if el.classes:includes("trails") then return {} end
end
LUA
for topic in power printing sound backup user; do
  # the topic's own guide page first when there is one, then its pages in name order
  pages="$(ls "$TMP/$topic.html" 2>/dev/null || true) $(ls "$TMP/$topic"-*.html | sort)"
  "$PANDOC" --lua-filter="$TMP/notrails.lua" -f html -t odt --metadata lang=ru \
    -o "$OUT/$topic.odt" $pages
done
rm -r "$TMP"
