#!/bin/sh
# Regenerates the PDF files of set K (bench/sets/mandb_weasyprint_pdf_ru.json) from the Russian man
# pages of man-db as Debian ships them in manpages-ru: each page is rendered to HTML by mandoc and the
# HTML is printed to PDF by WeasyPrint. Needs (Debian 12, as root):
#   apt-get install -y --no-install-recommends manpages-ru mandoc fonts-dejavu-core fonts-dejavu-extra
#   python3 -m venv /tmp/wp && /tmp/wp/bin/pip install weasyprint==70.0
# (WeasyPrint uses the system's Pango; Debian 12 ships 1.50.12.) Versions used: manpages-ru 4.18.1-1,
# mandoc 1.14.6-1+b1, WeasyPrint 70.0 (pydyf 0.13.0), fonts-dejavu 2.37-6. The output is not
# byte-identical from run to run (WeasyPrint writes a creation date), but its text is; the committed
# files are the ones the set was written on (their sha256 is in the set).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
weasyprint=${WEASYPRINT:-/tmp/wp/bin/weasyprint}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/page.css" <<'CSS'
@page { size: A4; margin: 2cm 2cm 2.2cm 2cm; }
body { font-family: "DejaVu Serif"; font-size: 11pt; }
h1, h2, .head, .foot { font-family: "DejaVu Sans"; }
CSS
for page in man1/man.1 man1/apropos.1 man1/whatis.1 man1/manpath.1 man5/manpath.5 man8/mandb.8 \
            man8/catman.8 man1/lexgrog.1 man1/manconv.1 man1/man-recode.1 man1/zsoelim.1 man8/accessdb.8; do
  name=$(basename "$page")
  zcat "/usr/share/man/ru/$page.gz" | mandoc -K utf-8 -Thtml > "$work/$name.html"
  "$weasyprint" -q -s "$work/page.css" "$work/$name.html" "$here/$name.pdf"
done
