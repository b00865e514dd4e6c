#!/bin/sh
# Set BH's document: the whole Russian handbook of KMenuEdit, KDE's editor of the application menu («Руководство
# пользователя редактора меню KDE»), from the DocBook source that kmenuedit ships (/usr/share/doc/HTML/ru/kmenuedit/
# index.docbook, beside KDE's own rendering index.cache.bz2 and five of its screenshots), read by pandoc's DocBook
# reader and written as one ODT by pandoc's ODT writer (its default reference document and template, `--metadata
# lang=ru`), where set N's ODT files were written by pandoc from yelp-build's HTML pages. pandoc does not read a DTD,
# so xmllint first expands KDE's entities (names, addresses, key names, &kde;, the FDL notice) into one self-contained
# DocBook file (`--noent --loaddtd`, UTF-8), KDE's DTD and entities resolving through the XML catalog of kdoctools5;
# nothing is fetched from the network. A Lua filter drops the pictures (six: five screenshots, shipped in the Russian
# folder, and an icon), so that the ODT holds none whatever folder pandoc looks in; pandoc runs in the temporary folder,
# where it would find none of them anyway. Nothing else is dropped.
# Reproducibility. pandoc 2.17's ODT writer takes the dates in meta.xml (meta:creation-date, dc:date) from
# SOURCE_DATE_EPOCH but stamps every zip entry with the time of the run, so pandoc runs under faketime with the wall
# clock stopped at 2026-11-29 00:00:00 UTC (`faketime -f`, an absolute time without «@», so it does not advance; the
# monotonic clock left real), with SOURCE_DATE_EPOCH set to the same time. The ODT holds no random id: with that two
# runs give the same bytes.
#   apt-get install -y --no-install-recommends kmenuedit kdoctools5 docbook-xml libxml2-utils pandoc faketime
# Made with Debian 12's kmenuedit 4:5.27.5-2 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xml 4.5-12, xmllint (libxml2-utils 2.9.14+dfsg-1.3~deb12u6), pandoc 2.17.1.1-2~deb12u1 and
# faketime / libfaketime 0.9.10-2.1.
set -eu
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/doc/HTML/ru/kmenuedit}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xmllint --nonet --noent --loaddtd --encode UTF-8 --output "$TMP/kmenuedit-handbook-ru.xml" "$SRC/index.docbook"
cat > "$TMP/nopictures.lua" <<'LUA'
function Image(el) return {} end
LUA
cd "$TMP"
SOURCE_DATE_EPOCH=1795910400 TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "2026-11-29 00:00:00" \
  "$PANDOC" --lua-filter="$TMP/nopictures.lua" -f docbook -t odt --metadata lang=ru \
  -o "$OUT/kmenuedit-handbook-ru.odt" kmenuedit-handbook-ru.xml
test -s "$OUT/kmenuedit-handbook-ru.odt"
