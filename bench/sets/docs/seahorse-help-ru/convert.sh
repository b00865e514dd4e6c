#!/bin/sh
# Set T's document: the whole Russian help of Seahorse 43.0, GNOME's «Пароли и ключи» (Mallard,
# seahorse 43.0-1, /usr/share/help/ru/seahorse), rendered to HTML by yelp-build, joined by pandoc into
# one HTML page (the guide page index.html first, then the other 40 pages in name order, C locale;
# yelp's breadcrumb line and the pictures left out) and printed to PDF by WeasyPrint, A4, DejaVu fonts,
# every help page starting on a new PDF page, no automatic hyphenation.
#   apt-get install -y --no-install-recommends seahorse yelp-tools pandoc weasyprint fonts-dejavu-core
# Made with Debian 12's yelp-tools 42.1-2, pandoc 2.17.1.1-2~deb12u1, weasyprint 57.2-1 (Pango 1.50.12)
# and fonts-dejavu-core 2.37-6; SRC may name an unpacked copy of the help (the set was made from
# seahorse's .deb unpacked under /tmp). The PDF is not byte-reproducible (WeasyPrint writes a creation
# date), its text is; the file the set was written on is committed beside this script.
set -e
PANDOC=${PANDOC:-pandoc}
YELP_BUILD=${YELP_BUILD:-yelp-build}
WEASYPRINT=${WEASYPRINT:-weasyprint}
SRC=${SRC:-/usr/share/help/ru/seahorse}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
$YELP_BUILD html -o "$TMP" "$SRC"/*.page
cat > "$TMP/filter.lua" <<'LUA'
function Div(el)
  if el.classes:includes("trails") then return {} end
end
function Image(el) return {} end
LUA
cat > "$TMP/page.css" <<'CSS'
@page { size: A4; margin: 2cm 2cm 2.2cm 2cm; }
html { font-size: 11pt; }
body { font-family: "DejaVu Serif"; font-size: 11pt; max-width: none; padding: 0; margin: 0; hyphens: manual; }
h1, h2, h3 { font-family: "DejaVu Sans"; }
h1 { page-break-before: always; }
CSS
pages="$TMP/index.html $(cd "$TMP" && ls *.html | grep -v '^index\.html$' | LC_ALL=C sort | sed "s|^|$TMP/|")"
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -s -f html -t html5 --metadata lang=ru \
  --metadata title="Справка Seahorse 43.0" -o "$TMP/seahorse-help-ru.html" $pages
"$WEASYPRINT" -q -s "$TMP/page.css" "$TMP/seahorse-help-ru.html" "$OUT/seahorse-help-ru.pdf"
rm -r "$TMP"
