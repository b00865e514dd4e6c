#!/bin/sh
# Set BB's documents: the whole Russian help of Brasero 3.12, GNOME's disc-burning program («Руководство по
# Brasero»; Mallard, brasero-common 3.12.3-2, /usr/share/help/ru/brasero), rendered to HTML by yelp-build — GNOME's
# own renderer, the HTML the GNOME help website serves — one file per page, named by the page's id, kept as yelp
# writes them (as set AD's): the breadcrumb line at the top, the link lists and the credits at the foot of each page
# stay. Only the HTML pages are kept: the style sheet (ru.css), the two scripts (yelp.js, highlight.pack.js) and the
# pictures (figures/) that yelp-build writes beside them are removed, so the pages' links to them point at nothing.
#   apt-get install -y --no-install-recommends brasero-common yelp-tools
# Made with Debian 12's brasero-common 3.12.3-2 (its .deb unpacked under /tmp; SRC may name such a copy), yelp-tools
# 42.1-2 and yelp-xsl 42.1-2+deb12u1. HTML pages hold no date or random id: two runs give the same bytes.
set -eu
YELP_BUILD=${YELP_BUILD:-yelp-build}
SRC=${SRC:-/usr/share/help/ru/brasero}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$YELP_BUILD" html -o "$TMP" "$SRC"/*.page
rm -f "$OUT"/*.html
cp "$TMP"/*.html "$OUT"/
