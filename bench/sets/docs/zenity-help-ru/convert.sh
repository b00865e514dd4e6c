#!/bin/sh
# Set BJ's document: the whole Russian help of Zenity 3.44, GNOME's program that shows dialog boxes from shell
# scripts («Руководство по Zenity»; Mallard, zenity-common 3.44.0-1, /usr/share/help/ru/zenity, 19 pages), rendered to
# HTML by yelp-build one file per page, joined by pandoc into one HTML page in the order of the guide (the index page,
# then the pages in the order of its links, the four message dialogs after the guide page «Диалоговое окно сообщения»
# in the order of its links), then converted by calibre into one FictionBook 2 book (`ebook-convert … .fb2`), where
# sets P's and BD's books came from pandoc. pandoc's filter drops yelp's breadcrumb line, the credits at the foot of
# each page (the same authors, translator and licence on every page) and the pictures, keeps the text of the links
# between pages without their targets, unwraps yelp's <div>s and makes each bare run of text a paragraph, as set BD's
# did: calibre's FB2 writer starts a <section> only at a heading that is a child of <body>, and with the <div>s left it
# wrote the whole help as one section without titles. calibre builds its table of contents from the page's <h1>
# (the pages' titles) and <h2> (their sections and link lists) headings (`--level1-toc //h:h1 --level2-toc //h:h2`)
# and writes a <section> with a <title> for each (`--sectionize toc`); the book's genre is comp_soft and its language
# ru (calibre's defaults are antique and en).
# Reproducibility. calibre's FB2 writer puts the day of the run in <document-info>'s <date>, and a uuid it draws at
# each run in its <id> unless the book's metadata hold one: the script hands calibre an OPF file with a fixed uuid
# identifier and the title (`--from-opf`; under LC_ALL=C calibre read the page's <title> as mojibake, the text of the
# book staying the same) and runs it under faketime with the wall clock stopped at 2026-11-29 00:00:00 UTC (`faketime
# -f`, an absolute time without «@»; the monotonic clock left real by FAKETIME_DONT_FAKE_MONOTONIC=1), with calibre's
# configuration in a folder of the temporary one. With that two runs give the same bytes, also from a copy of the
# source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends zenity-common yelp-tools pandoc calibre faketime
# Made with Debian 12's zenity-common 3.44.0-1 (its .deb unpacked under /tmp; SRC may name such a copy), yelp-tools
# 42.1-2, yelp-xsl 42.1-2+deb12u1, pandoc 2.17.1.1-2~deb12u1, calibre 6.13.0 (calibre 6.13.0+repack-2+deb12u10) and
# faketime / libfaketime 0.9.10-2.1.
set -eu
YELP_BUILD=${YELP_BUILD:-yelp-build}
PANDOC=${PANDOC:-pandoc}
EBOOK_CONVERT=${EBOOK_CONVERT:-ebook-convert}
SRC=${SRC:-/usr/share/help/ru/zenity}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BOOK_ID=5b0e7c2d-1f4a-4c39-9d8e-2a6b3f0c9e17
mkdir "$TMP/pages" "$TMP/html" "$TMP/out" "$TMP/calibre"
"$YELP_BUILD" html -o "$TMP/pages" "$SRC"/*.page
cat > "$TMP/filter.lua" <<'LUA'
function Div(el)
  if el.classes:includes("trails") or el.classes:includes("about") then return {} end
  return el.content
end
function Image(el) return {} end
function Link(el)
  if not el.target:match("^https?:") then return el.content end
end
function Plain(el) return pandoc.Para(el.content) end
LUA
cat > "$TMP/page.html" <<'HTML'
<!DOCTYPE html>
<html lang="ru">
<head>
<meta charset="utf-8">
<title>$title$</title>
</head>
<body>
$body$
</body>
</html>
HTML
cat > "$TMP/metadata.opf" <<OPF
<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="2.0" unique-identifier="uuid_id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:opf="http://www.idpf.org/2007/opf">
    <dc:identifier opf:scheme="uuid" id="uuid_id">$BOOK_ID</dc:identifier>
    <dc:title>Руководство по Zenity</dc:title>
  </metadata>
</package>
OPF
cd "$TMP/pages"
links() { grep -o 'href="[^"#]*\.html' "$1" | sed 's/href="//' | grep -v '^index\.html$' | awk '!seen[$0]++'; }
pages=index.html
for page in $(links index.html); do
  pages="$pages $page"
  if grep -q 'class="links topiclinks"' "$page"; then pages="$pages $(links "$page")"; fi
done
[ "$(echo $pages | wc -w)" -eq 19 ] || { echo "expected 19 pages, found $(echo $pages | wc -w)" >&2; exit 1; }
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -f html -s --template="$TMP/page.html" -t html5 \
  --metadata title="Руководство по Zenity" -o "$TMP/html/zenity-help-ru.html" $pages
CALIBRE_CONFIG_DIRECTORY="$TMP/calibre" TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "2026-11-29 00:00:00" \
  "$EBOOK_CONVERT" "$TMP/html/zenity-help-ru.html" "$TMP/out/zenity-help-ru.fb2" --from-opf "$TMP/metadata.opf" \
  --level1-toc '//h:h1' --level2-toc '//h:h2' --sectionize toc --fb2-genre comp_soft --language ru \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
grep -q "<id>$BOOK_ID</id>" "$TMP/out/zenity-help-ru.fb2" || { echo "the book's id is not $BOOK_ID" >&2; exit 1; }
cp "$TMP/out/zenity-help-ru.fb2" "$OUT/zenity-help-ru.fb2"
test -s "$OUT/zenity-help-ru.fb2"
