#!/bin/sh
# Set AD's documents: the whole Russian help of Gnote 43.1, GNOME's note-taking program («Справка Gnote»;
# Mallard, gnote 43.1-1, /usr/share/help/ru/gnote, 29 pages), rendered to HTML by yelp-build — GNOME's own
# renderer, the HTML the GNOME help website serves — one file per page, named by the page's id, kept as
# yelp writes them: the breadcrumb line at the top, the link lists and the credits at the foot of each
# page stay. Only the HTML pages are kept: the style sheet (ru.css), the two scripts (yelp.js,
# highlight.pack.js) and the pictures (figures/) that yelp-build writes beside them are removed, so the
# pages' links to them point at nothing.
#   apt-get install -y --no-install-recommends gnote yelp-tools
# Made with Debian 12's gnote 43.1-1 (its .deb unpacked under /tmp; SRC may name such a copy), yelp-tools
# 42.1-2 and yelp-xsl 42.1-2+deb12u1. Two runs give the same bytes.
set -eu
YELP_BUILD=${YELP_BUILD:-yelp-build}
SRC=${SRC:-/usr/share/help/ru/gnote}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$YELP_BUILD" html -o "$TMP" "$SRC"/*.page
rm -f "$OUT"/*.html
cp "$TMP"/*.html "$OUT"/
