#!/bin/sh
# Regenerates the four DOCX files of set F (bench/sets/doublecmd_docx_ru.json) from the Russian
# Double Commander help as Debian ships it. Needs (Debian 12, as root):
#   apt-get install -y --no-install-recommends doublecmd-help-ru libreoffice-writer-nogui
# Versions used: doublecmd-help-ru 1.0.10-1, LibreOffice 7.4.7.2 (libreoffice-writer-nogui
# 4:7.4.7-1+deb12u14). The output is not byte-identical from run to run (zip timestamps), but its
# text is; the committed files are the ones the set was written on (their sha256 is in the set).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
for page in help faq findfiles multiarc; do
  soffice -env:UserInstallation="file://$profile" --headless --infilter="HTML (StarWriter)" \
    --convert-to "docx:MS Word 2007 XML" --outdir "$here" "/usr/share/doublecmd/doc/ru/$page.html"
done
