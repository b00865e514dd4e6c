#!/bin/sh
# Set P's document: every sky culture description of Stellarium 0.22.2 that has a Russian
# translation (stellarium-data 0.22.2-1, Debian 12: /usr/share/stellarium/skycultures/*/description.ru.utf8,
# 32 HTML fragments), joined in folder-name order into one FictionBook 2 book by pandoc.
#
#   apt-get install -y --no-install-recommends stellarium-data pandoc
#   sh bench/sets/docs/stellarium-skycultures-ru/convert.sh
#
# Step 1, per description: pandoc HTML -> HTML with captions.lua (pictures dropped, level-5
#   caption headings made paragraphs); a description whose first heading is <h2> (chinese, indian,
#   khoi-san) is shifted one level up, so every culture is a top-level section of the book.
# Step 2: pandoc --file-scope joins the 32 pages into FB2; the book title is set here (the
#   descriptions have none of their own).
# pandoc's FB2 has no document id or date, and two runs of this script gave the same bytes; the
# file the set was written on is committed all the same, so checking the set needs neither
# stellarium-data (246 MB) nor pandoc.
set -eu
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/stellarium/skycultures}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/stellarium-skycultures-ru.fb2}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
i=0
for f in $(cd "$SRC" && LC_ALL=C ls -d */description.ru.utf8); do
  culture=${f%%/*}
  first=$(grep -o '<h[1-6]' "$SRC/$f" | head -n 1 | cut -c3)
  i=$((i + 1))
  "$PANDOC" -f html -t html5 --shift-heading-level-by=$((1 - first)) --lua-filter "$HERE/captions.lua" \
    -o "$TMP/$(printf %02d $i)-$culture.html" "$SRC/$f"
done
[ "$i" -eq 32 ] || { echo "expected 32 descriptions, found $i" >&2; exit 1; }
"$PANDOC" --file-scope -f html -t fb2 --metadata lang=ru \
  --metadata title="Stellarium 0.22.2: культуры неба" -o "$OUT" "$TMP"/*.html
sha256sum "$OUT"
