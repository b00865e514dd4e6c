#!/bin/sh
# Set BA's document: the whole Russian help of File Roller 43.0, GNOME's archive manager («Справка по менеджеру
# архивов»; Mallard, file-roller 43.0-1, /usr/share/help/ru/file-roller, 14 pages), built into one EPUB by yelp-build
# epub — GNOME's own renderer writing its EPUB 2 (one XHTML file per page, the spine in the order of the guide's
# links, an NCX table of contents). yelp-build draws a random uuid as the book's identifier at each run and zip stamps
# each entry with the time of the run, so the book is laid out with --nozip, the uuid in opf.opf and ncx.ncx is
# replaced by a fixed one, every file gets a fixed time (2026-11-28 00:00:00 UTC) and mode, and zip writes the
# mimetype first, uncompressed, then the other files in byte order without extra fields (-X) or folder entries (-D).
# The style sheet, the two scripts and the program's icon that yelp-build puts in the book stay in it.
#   apt-get install -y --no-install-recommends file-roller yelp-tools zip
# Made with Debian 12's file-roller 43.0-1 (its .deb unpacked under /tmp; SRC may name such a copy), yelp-tools
# 42.1-2, yelp-xsl 42.1-2+deb12u1 and zip 3.0-13. Two runs give the same bytes.
set -eu
YELP_BUILD=${YELP_BUILD:-yelp-build}
SRC=${SRC:-/usr/share/help/ru/file-roller}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BOOK_ID=5f0d7a3e-2b1c-4c8e-9a6f-0e1d2c3b4a59
PYTHONHASHSEED=0 "$YELP_BUILD" epub --nozip -o "$TMP/EPUB" "$SRC"
cd "$TMP/EPUB"
for f in OPS/opf.opf OPS/ncx.ncx; do
  sed -E "s/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/$BOOK_ID/g" "$f" > "$f.new"
  mv "$f.new" "$f"
done
find . -type d -exec chmod 755 {} +
find . -type f -exec chmod 644 {} +
find . -exec touch -h -d '2026-11-28 00:00:00 UTC' {} +
rm -f "$OUT/file-roller-help-ru.epub"
TZ=UTC zip -q -X -0 "$OUT/file-roller-help-ru.epub" mimetype
find META-INF OPS -type f | LC_ALL=C sort | TZ=UTC zip -q -X -D -9 "$OUT/file-roller-help-ru.epub" -@
test -s "$OUT/file-roller-help-ru.epub"
