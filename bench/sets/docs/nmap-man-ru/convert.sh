#!/bin/sh
# Set CC's document: six sections of the Russian manual page of Nmap, the network exploration tool and port scanner
# («nmap - Утилита для исследования сети и сканер портов», the Russian «Справочное Руководство Nmap» by Гуз Александр
# and Марк Бруцкий, translated from revision 6184 of the English page), from the page that nmap ships
# (/usr/share/man/ru/man1/nmap.1.gz, roff that the DocBook XSL stylesheets made), read by pandoc's man reader into one
# HTML page and written as one OpenDocument text by Qt's own ODF writer (QTextDocumentWriter with the format «odf»,
# through PyQt5), where the earlier ODT files were written by LibreOffice Writer, pandoc and AbiWord. The page has 23
# sections and about 162,000 characters of text; awk keeps the name, the synopsis and six sections on what Nmap is and
# its port table, naming the targets, the port states, choosing the ports, the keys while it runs and the examples
# (ОПИСАНИЕ, ОПРЕДЕЛЕНИЕ ЦЕЛИ СКАНИРОВАНИЯ, ОСНОВЫ СКАНИРОВАНИЯ ПОРТОВ, ОПРЕДЕЛЕНИЕ ПОРТОВ И ПОРЯДКА СКАНИРОВАНИЯ,
# ВЗАИМОДЕЙСТВИЕ ВО ВРЕМЯ ВЫПОЛНЕНИЯ, ПРИМЕРЫ), and leaves out the translators' notes, the summary of options, host
# discovery, the scan techniques, service, version and OS detection, the scripting engine, timing, evading firewalls,
# output, the other options, bugs, the author, the legal notices and the notes. The page defines the string Aq, the
# apostrophe, in a conditional (`.ie \n(.g .ds Aq \(aq`) that pandoc does not read, so sed writes groff's \(aq in its
# place first. pandoc (`-f man -t html5`, a template of the script's own) writes the title «nmap(1)» from the .TH
# line's name and section as <h1>, the eight .SH sections as <h2>, each option and port state a paragraph of its own
# followed by its description in a block quote (the .RS indent), the example commands and the scan's output as code.
# Qt reads the page into a QTextDocument (setHtml) and writes it with QTextDocumentWriter: content.xml, the manifest
# and the mimetype, no styles.xml and no meta.xml; every block a <text:p> (headings too: Qt's ODF writer has no
# <text:h>), its text in spans of automatic styles, spaces after the first of a run as <text:s>.
# Reproducibility. pandoc's page holds no date or id (the .TH line's date is not written: the template uses the name
# and section alone). Qt names the automatic styles in the order of a QHash, whose seed is random in each process, so
# the script runs it with QT_HASH_SEED=0; its zip writer dates each entry with the time of the run, so python3's
# zipfile writes the entries again, unchanged, in Qt's order and with Qt's compression, each dated 2026-11-29 00:00:00.
# Qt runs on its «minimal» platform (no display), with HOME and XDG_RUNTIME_DIR in the temporary folder. Two runs give
# the same bytes, also from a copy of the source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends nmap pandoc python3 python3-pyqt5
# Made with Debian 12's nmap 7.93+dfsg1-1 (its .deb unpacked under /tmp; SRC may name such a copy), pandoc
# 2.17.1.1-2~deb12u1, python3 3.11.2 and python3-pyqt5 5.15.9+dfsg-1 on Qt 5.15.8 (libqt5gui5 5.15.8+dfsg-11+deb12u3).
set -eu
PANDOC=${PANDOC:-pandoc}
PYTHON=${PYTHON:-/usr/bin/python3}
SRC=${SRC:-/usr/share/man/ru/man1}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/home" "$TMP/runtime"
chmod 700 "$TMP/runtime"
cat > "$TMP/page.html" <<'HTML'
<!DOCTYPE html>
<html lang="ru">
<head>
<meta charset="utf-8">
<title>$title$($section$)</title>
</head>
<body>
<h1>$title$($section$)</h1>
$body$
</body>
</html>
HTML
gzip -dc "$SRC/nmap.1.gz" | sed 's/\\\*(Aq/\\(aq/g' | awk '
  /^\.SH / {
    name = $0; sub(/^\.SH "/, "", name); sub(/"$/, "", name)
    keep = name == "НАЗВАНИЕ" || name == "СИНТАКСИС" || name == "ОПИСАНИЕ" ||
      name == "ОПРЕДЕЛЕНИЕ ЦЕЛИ СКАНИРОВАНИЯ" || name == "ОСНОВЫ СКАНИРОВАНИЯ ПОРТОВ" ||
      name == "ОПРЕДЕЛЕНИЕ ПОРТОВ И ПОРЯДКА СКАНИРОВАНИЯ" || name == "ВЗАИМОДЕЙСТВИЕ ВО ВРЕМЯ ВЫПОЛНЕНИЯ" ||
      name == "ПРИМЕРЫ"
    started = 1
  }
  !started || keep' > "$TMP/nmap.1"
! grep -q '\\\*(' "$TMP/nmap.1" || { echo "a string other than Aq is used" >&2; exit 1; }
[ "$(grep -c '^\.SH ' "$TMP/nmap.1")" -eq 8 ] || { echo "expected 8 sections" >&2; exit 1; }
HOME="$TMP/home" "$PANDOC" -f man -t html5 --shift-heading-level-by=1 --template="$TMP/page.html" \
  -o "$TMP/nmap.html" "$TMP/nmap.1"
[ "$(grep -o '<h2' "$TMP/nmap.html" | wc -l)" -eq 8 ] || { echo "expected 8 headings" >&2; exit 1; }
HOME="$TMP/home" XDG_RUNTIME_DIR="$TMP/runtime" QT_QPA_PLATFORM=minimal QT_HASH_SEED=0 \
  "$PYTHON" - "$TMP/nmap.html" "$TMP/qt.odt" > "$TMP/log" 2>&1 <<'PY' || { cat "$TMP/log"; exit 1; }
import sys
from PyQt5.QtGui import QGuiApplication, QTextDocument, QTextDocumentWriter
app = QGuiApplication(sys.argv[:1])
document = QTextDocument()
with open(sys.argv[1], encoding="utf-8") as page:
    document.setHtml(page.read())
writer = QTextDocumentWriter(sys.argv[2], b"odf")
if not writer.write(document):
    sys.exit("QTextDocumentWriter failed: " + writer.device().errorString())
PY
"$PYTHON" - "$TMP/qt.odt" "$TMP/nmap-man-ru.odt" <<'PY'
import sys, zipfile
source, target = sys.argv[1:]
with zipfile.ZipFile(source) as odt:
    entries = odt.infolist()
    assert entries[0].filename == "mimetype" and entries[0].compress_type == zipfile.ZIP_STORED
    with zipfile.ZipFile(target, "w") as out:
        for entry in entries:
            info = zipfile.ZipInfo(entry.filename, date_time=(2026, 11, 29, 0, 0, 0))
            info.compress_type = entry.compress_type
            info.external_attr = 0o100644 << 16
            out.writestr(info, odt.read(entry))
PY
cp "$TMP/nmap-man-ru.odt" "$OUT/nmap-man-ru.odt"
test -s "$OUT/nmap-man-ru.odt"
