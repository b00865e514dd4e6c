#!/bin/sh
# Set Q's documents: the organiser part of the Russian help of Evolution 3.46 (Mallard,
# evolution-common 3.46.4-2+deb12u1, /usr/share/help/ru/evolution): every page whose name starts
# with calendar-, contacts-, tasks- or memos-, rendered to HTML by yelp-build and joined by pandoc
# into one RTF file per topic, pages in name order (C locale).
#   apt-get install -y --no-install-recommends evolution-common yelp-tools pandoc
# Made with Debian 12's yelp-tools 42.1-2 and pandoc 2.17.1.1-2~deb12u1; SRC may name an unpacked copy
# of the help (the set was made from evolution-common's .deb unpacked under /tmp).
set -e
PANDOC=${PANDOC:-pandoc}
YELP_BUILD=${YELP_BUILD:-yelp-build}
SRC=${SRC:-/usr/share/help/ru/evolution}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
$YELP_BUILD html -o "$TMP" "$SRC"/*.page
# drop yelp's breadcrumb line repeated on every page, and the pictures (RTF would embed them);
# everything else on the page (title, text, «Ещё в разделе…» links) is kept
cat > "$TMP/filter.lua" <<'LUA'
function Div(el)
  if el.classes:includes("trails") then return {} end
end
function Image(el) return {} end
LUA
for topic in calendar:календарь contacts:контакты tasks:задачи memos:заметки; do
  name=${topic%%:*}
  pages=$(cd "$TMP" && ls "$name"-*.html | LC_ALL=C sort | sed "s|^|$TMP/|")
  "$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -f html -s -t rtf --metadata lang=ru \
    --metadata title="Справка Evolution: ${topic#*:}" -o "$OUT/evolution-$name.rtf" $pages
done
rm -r "$TMP"
