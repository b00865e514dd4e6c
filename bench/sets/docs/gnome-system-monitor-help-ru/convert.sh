#!/bin/sh
# Set AA's document: the whole Russian help of GNOME System Monitor 42.0 («Системный монитор»; Mallard,
# gnome-system-monitor 42.0-2, /usr/share/help/ru/gnome-system-monitor), rendered to HTML by yelp-build,
# joined by pandoc into one HTML page (the guide page index.html first, then the other 25 pages in name
# order, C locale; yelp's breadcrumb line and the pictures left out) and printed to PDF by headless
# Chromium («Print to PDF» of a browser): A4, DejaVu fonts, no header or footer line, every help page
# starting on a new PDF page.
#   apt-get install -y --no-install-recommends gnome-system-monitor yelp-tools pandoc chromium fonts-dejavu-core
# Made with Debian 12's yelp-tools 42.1-2, pandoc 2.17.1.1-2~deb12u1, chromium 156.0.8078.108-1~deb12u1 and
# fonts-dejavu-core 2.37-6; SRC may name an unpacked copy of the help (the set was made from
# gnome-system-monitor's .deb unpacked under /tmp). The PDF is not byte-reproducible (Chromium writes
# creation dates), its text is; the file the set was written on is committed beside this script.
set -e
PANDOC=${PANDOC:-pandoc}
YELP_BUILD=${YELP_BUILD:-yelp-build}
CHROMIUM=${CHROMIUM:-chromium}
SRC=${SRC:-/usr/share/help/ru/gnome-system-monitor}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
$YELP_BUILD html -o "$TMP" "$SRC"/*.page
cat > "$TMP/filter.lua" <<'LUA'
function Div(el)
  if el.classes:includes("trails") then return {} end
end
function Image(el) return {} end
LUA
cat > "$TMP/style.html" <<'CSS'
<style>
@page { size: A4; margin: 2cm 2cm 2.2cm 2cm; }
html { font-size: 11pt; }
body { font-family: "DejaVu Serif"; font-size: 11pt; max-width: none; padding: 0; margin: 0; hyphens: manual; }
h1, h2, h3 { font-family: "DejaVu Sans"; }
h1 { break-before: page; }
code, pre { font-family: "DejaVu Sans Mono"; }
</style>
CSS
pages="$TMP/index.html $(cd "$TMP" && ls *.html | grep -v '^index\.html$' | LC_ALL=C sort | sed "s|^|$TMP/|")"
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -s -f html -t html5 --metadata lang=ru \
  --metadata title="Справка Системного монитора GNOME 42.0" -H "$TMP/style.html" \
  -o "$TMP/gnome-system-monitor-help-ru.html" $pages
"$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$TMP/profile" --no-pdf-header-footer \
  --print-to-pdf="$OUT/gnome-system-monitor-help-ru.pdf" "file://$TMP/gnome-system-monitor-help-ru.html" 2>/dev/null
rm -r "$TMP"
