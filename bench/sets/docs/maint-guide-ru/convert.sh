#!/bin/sh
# Set X's document: chapters 1-3 of the Russian «Руководство начинающего разработчика Debian» (the Debian
# New Maintainers' Guide, maint-guide-ru 1.2.53, /usr/share/doc/maint-guide-ru/html: DocBook rendered to
# XHTML by the DocBook XSL stylesheets, one file per chapter): start.ru.html («Хорошее начало — половина
# дела»), first.ru.html («Первые шаги») and modify.ru.html («Изменение исходного кода»), joined by
# python3 into one XHTML page (each chapter's navigation bars and table of contents left out, nothing
# else) and converted to one ODT by LibreOffice Writer (its HTML import filter, headless).
#   apt-get install -y --no-install-recommends maint-guide-ru libreoffice-writer-nogui
# Made with Debian 12's maint-guide-ru 1.2.53 (its .deb unpacked under /tmp; SRC may name such a copy) and
# LibreOffice 7.4.7.2 (libreoffice-writer-nogui 4:7.4.7-1+deb12u14). The ODT is not byte-reproducible
# (zip timestamps, meta.xml dates), its text is; the file the set was written on is committed beside
# this script.
set -eu
SRC=${SRC:-/usr/share/doc/maint-guide-ru/html}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 - "$SRC" "$TMP/maint-guide-ru.html" <<'PY'
import re
import sys
from pathlib import Path
src, out = Path(sys.argv[1]), Path(sys.argv[2])
bodies = []
for name in ("start", "first", "modify"):
    page = (src / f"{name}.ru.html").read_text(encoding="utf-8")
    body = page.split("<body>", 1)[1].rsplit("</body>", 1)[0]
    # the navigation bars (tables of arrow pictures) and the chapter's table of contents hold no <div>
    # of their own, so each ends at the first </div> after it
    for cls in ("navheader", "navfooter", "toc"):
        body = re.sub(r'<div class="%s">.*?</div>' % cls, "", body, count=1, flags=re.S)
    bodies.append(body)
out.write_text(
    '<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml" lang="ru">\n'
    "<head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\"/>"
    "<title>Руководство начинающего разработчика Debian</title></head>\n<body>\n"
    + "\n".join(bodies) + "\n</body>\n</html>\n", encoding="utf-8")
PY
soffice -env:UserInstallation="file://$TMP/profile" --headless --infilter="HTML (StarWriter)" \
  --convert-to odt:writer8 --outdir "$OUT" "$TMP/maint-guide-ru.html"
