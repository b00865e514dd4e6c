#!/bin/sh
# Set CB's document: the Russian manual page of mkvextract, the MKVToolNix program that extracts tracks, tags,
# attachments, chapters, cue sheets, timestamps and cues from Matroska files («mkvextract - извлечение дорожки из файлов
# Matroska в другие файлы», MKVToolNix 74.0.0, 2023-02-12), from the page that mkvtoolnix ships
# (/usr/share/man/ru/man1/mkvextract.1.gz, roff that the DocBook XSL stylesheets made), read by pandoc's man reader into
# one HTML fragment and converted by kramdown into one Markdown file in kramdown's own dialect, where the earlier
# Markdown files were written by pandoc and html2text. pandoc (`-f man -t html5`) makes each .SH section an <h2> and
# each .SS subsection an <h3> under the page's title, «mkvextract(1)», which its template writes as the <h1> from the
# .TH line's name and section; each option, track type and variable a term in a paragraph of its own followed by its
# description in a block quote (the .RS indent), the examples code blocks, the list of exit codes items each in a block
# quote. The page defines the string Aq, the apostrophe, in a conditional (`.ie \n(.g .ds Aq \(aq`) that pandoc does not
# read, so it would drop the quotes of «'полный'», «'tracks'», «'Warning:'» and the like: sed writes groff's \(aq in its
# place first, the character man shows. kramdown (`-i html -o kramdown`) writes ATX headings, each paragraph, term,
# quoted description and list item on one line (`--line-width` above any line's length), the block quotes with «> », the
# code blocks indented by four spaces inside them, and escapes the characters its syntax uses («A\_AAC»,
# «выходное\_имя», «\[параметры\]», «\'Warning:\'»); where a bold run begins or ends with a space it keeps the run as
# raw HTML («<strong> --output-charset</strong>»).
# Reproducibility. Neither pandoc's HTML fragment nor kramdown's Markdown holds a date or an id (the .TH line's date is
# not written: the template uses the name and section alone), and two plain runs gave the same bytes. kramdown runs with
# its input and output read and written as UTF-8 (RUBYOPT=-Eutf-8:utf-8; under LC_ALL=C it read them as US-ASCII and
# stopped), and HOME in the temporary folder. Two runs give the same bytes, also from a copy of the source in another
# folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends mkvtoolnix pandoc kramdown
# Made with Debian 12's mkvtoolnix 74.0.0-1+deb12u1 (its .deb unpacked under /tmp; SRC may name such a copy), pandoc
# 2.17.1.1-2~deb12u1 and kramdown 2.4.0 (kramdown and ruby-kramdown 2.4.0-2, ruby 3.1).
set -eu
PANDOC=${PANDOC:-pandoc}
KRAMDOWN=${KRAMDOWN:-kramdown}
SRC=${SRC:-/usr/share/man/ru/man1}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/home"
cat > "$TMP/page.html" <<'HTML'
<h1>$title$($section$)</h1>
$body$
HTML
gzip -dc "$SRC/mkvextract.1.gz" | sed 's/\\\*(Aq/\\(aq/g' > "$TMP/mkvextract.1"
! grep -q '\\\*(' "$TMP/mkvextract.1" || { echo "a string other than Aq is used" >&2; exit 1; }
HOME="$TMP/home" "$PANDOC" -f man -t html5 --shift-heading-level-by=1 --template="$TMP/page.html" \
  -o "$TMP/mkvextract.html" "$TMP/mkvextract.1"
[ "$(grep -o '<h2' "$TMP/mkvextract.html" | wc -l)" -eq 12 ] || { echo "expected 12 sections" >&2; exit 1; }
HOME="$TMP/home" RUBYOPT=-Eutf-8:utf-8 "$KRAMDOWN" -i html -o kramdown --line-width 100000 "$TMP/mkvextract.html" \
  > "$TMP/mkvextract-man-ru.md" 2> "$TMP/log" || { cat "$TMP/log"; exit 1; }
[ ! -s "$TMP/log" ] || { cat "$TMP/log"; exit 1; }
cp "$TMP/mkvextract-man-ru.md" "$OUT/mkvextract-man-ru.md"
test -s "$OUT/mkvextract-man-ru.md"
