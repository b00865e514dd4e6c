#!/bin/sh
# Set W's document: the whole Russian handbook of Marble 22.12.3, KDE's virtual globe and atlas
# («Руководство пользователя Marble», marble-data 4:22.12.3-1, /usr/share/doc/HTML/ru/marble/index.cache.bz2:
# the handbook's DocBook rendered to HTML by KDE's meinproc5, all pages in one file), split into its
# 22 pages and joined by pandoc into one DOCX in the order they have in the handbook (the KDE header, the
# navigation bars, the footer, the table of contents and the pictures left out, nothing else).
#   apt-get install -y --no-install-recommends marble-data pandoc
# Made with Debian 12's pandoc 2.17.1.1-2~deb12u1 (its default reference.docx) and python3 to split the
# cache file; SRC may name an unpacked copy of the handbook (the set was made from marble-data's .deb
# unpacked under /tmp). The DOCX is not byte-reproducible (pandoc writes the date into docProps/core.xml),
# its text is; the file the set was written on is committed beside this script.
set -e
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/doc/HTML/ru/marble}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
bzcat "$SRC/index.cache.bz2" > "$TMP/index.cache"
python3 - "$TMP" <<'PY'
import re
import sys
from pathlib import Path
tmp = Path(sys.argv[1])
text = (tmp / "index.cache").read_text(encoding="utf-8")
names = []
for n, chunk in enumerate(text.split('<FILENAME filename="')[1:]):
    name, body = chunk.split('">', 1)
    # the screenshots are left out with their <img> tags: pandoc would put each one's alt text in its place
    body = re.sub(r"<img\b[^>]*>", "", body.replace("</FILENAME>", ""))
    (tmp / f"{n:02d}-{name}").write_text(body, encoding="utf-8")
    names.append(f"{n:02d}-{name}")
(tmp / "pages").write_text("\n".join(names) + "\n", encoding="utf-8")
PY
cat > "$TMP/filter.lua" <<'LUA'
local drop_ids = { header = true, footer = true }
function Div(el)
  if drop_ids[el.identifier] or el.classes:includes("navCenter") or el.classes:includes("toc") then
    return {}
  end
  return el.content
end
LUA
cd "$TMP"
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -s -f html -t docx \
  --metadata lang=ru --metadata title="Руководство пользователя Marble" \
  -o "$OUT/marble-handbook-ru.docx" $(cat pages)
rm -r "$TMP"
