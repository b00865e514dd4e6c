#!/bin/sh
# Regenerates the four PDF files of set J (bench/sets/aptitude_pdf_ru.json) from the Russian
# aptitude user's manual as Debian ships it. Needs (Debian 12, as root):
#   apt-get install -y --no-install-recommends aptitude-doc-ru libreoffice-writer-nogui
# Versions used: aptitude-doc-ru 0.8.13-5, LibreOffice 7.4.7.2 (libreoffice-writer-nogui
# 4:7.4.7-1+deb12u14). The output is not byte-identical from run to run (creation dates, ids),
# but its text is; the committed files are the ones the set was written on (their sha256 is in
# the set).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
for page in ch01s02 ch02s04s05 ch02s05s05 rn01re01; do
  soffice -env:UserInstallation="file://$profile" --headless --infilter="HTML (StarWriter)" \
    --convert-to "pdf:writer_pdf_Export" --outdir "$here" "/usr/share/doc/aptitude/html/ru/$page.html"
done
