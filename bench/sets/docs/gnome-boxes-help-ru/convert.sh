#!/bin/sh
# Set BC's document: the whole Russian help of GNOME Boxes 43, GNOME's program for virtual machines («Boxes»; Mallard,
# gnome-boxes 43.2-1, /usr/share/help/ru/gnome-boxes, 25 pages), rendered to HTML by yelp-build one file per page,
# joined by pandoc into one HTML page in the order of the guide (the index page, then the pages in the order of its
# links), opened by LibreOffice Writer as a text document (its HTML import filter, `--infilter="HTML (StarWriter)"`),
# saved as ODT (`--convert-to odt:writer8`) and that ODT saved as Rich Text (`--convert-to "rtf:Rich Text Format"`),
# all headless. pandoc's filter drops yelp's breadcrumb line, the credits at the foot of each page (the same
# copyright lines, authors, translators and licence on every page) and the pictures, and keeps the text of the links
# between pages without their targets (Writer's RTF would write each as an absolute file:// address of the temporary
# folder); each page's title, text and its «Дополнительная информация» and «Смотрите также» link lists stay, and the
# links to web addresses keep their targets.
# Reproducibility. An RTF that Writer saves from a page opened as HTML holds zero times in its \info group (\creatim,
# \revtim, \printim) and no revision-save ids, so no faketime is needed. What changed from run to run was the order
# of the RTF's font and colour tables (and with it the numbers by which every style refers to them): Writer lists them
# in the order its font and colour items lie in memory. With pandoc's default style sheet in the page four runs gave
# four files; written with a template of its own (the title and the charset, no style sheet) one run in six still
# differed, in the order of two fonts, and runs with the same folder names every time gave that other order each time;
# `setarch -R` (no address randomisation) and MALLOC_ARENA_MAX=1 did not help. Saving an ODT first and the RTF from
# it (Writer reads the ODT's fonts in their declared order) gave the same bytes in twenty runs, also from a copy of
# the source in another folder; the text is the same as that of the RTF saved straight from the page.
#   apt-get install -y --no-install-recommends gnome-boxes yelp-tools pandoc libreoffice-writer-nogui
# Made with Debian 12's gnome-boxes 43.2-1 (its .deb unpacked under /tmp; SRC may name such a copy), yelp-tools 42.1-2,
# yelp-xsl 42.1-2+deb12u1, pandoc 2.17.1.1-2~deb12u1 and LibreOffice 7.4.7.2 (libreoffice-writer-nogui
# 4:7.4.7-1+deb12u14). Two runs give the same bytes.
set -eu
YELP_BUILD=${YELP_BUILD:-yelp-build}
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/help/ru/gnome-boxes}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/pages" "$TMP/html"
"$YELP_BUILD" html -o "$TMP/pages" "$SRC"/*.page
cat > "$TMP/filter.lua" <<'LUA'
function Div(el)
  if el.classes:includes("trails") or el.classes:includes("about") then return {} end
end
function Image(el) return {} end
function Link(el)
  if not el.target:match("^https?:") then return el.content end
end
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
cd "$TMP/pages"
pages="index.html $(grep -o 'href="[^"#]*\.html' index.html | sed 's/href="//' | awk '!seen[$0]++')"
[ "$(echo $pages | wc -w)" -eq 25 ] || { echo "expected 25 pages, found $(echo $pages | wc -w)" >&2; exit 1; }
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -f html -s --template="$TMP/page.html" -t html5 \
  --metadata title="Справка Boxes" -o "$TMP/html/gnome-boxes-help-ru.html" $pages
soffice -env:UserInstallation="file://$TMP/profile" --headless --infilter="HTML (StarWriter)" \
  --convert-to odt:writer8 --outdir "$TMP/odt" "$TMP/html/gnome-boxes-help-ru.html" > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
soffice -env:UserInstallation="file://$TMP/profile" --headless \
  --convert-to "rtf:Rich Text Format" --outdir "$TMP/out" "$TMP/odt/gnome-boxes-help-ru.odt" > "$TMP/log" 2>&1 \
  || { cat "$TMP/log"; exit 1; }
cp "$TMP/out/gnome-boxes-help-ru.rtf" "$OUT/gnome-boxes-help-ru.rtf"
test -s "$OUT/gnome-boxes-help-ru.rtf"
