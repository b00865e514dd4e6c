#!/bin/sh
# Set V's document: the whole Russian handbook of KAlarm 22.12.3 («Руководство пользователя KAlarm»,
# kalarm 4:22.12.3-1, /usr/share/doc/HTML/ru/kalarm/index.cache.bz2: the handbook's DocBook rendered to
# HTML by KDE's meinproc5, all pages in one file), split into its 34 pages, joined by pandoc in the order
# they have in the handbook (the KDE header, the navigation bars, the footer, the table of contents and
# the pictures left out, nothing else) and typeset to PDF by pandoc's LaTeX template and LuaLaTeX:
# A4, DejaVu fonts, Russian hyphenation patterns (babel), no table of contents of its own; every table's
# columns are given equal widths, so that LaTeX wraps their cells (pandoc's default for a table without
# widths is one unwrapped line per cell, and the option tables and the FAQ ran off the page).
#   apt-get install -y --no-install-recommends kalarm pandoc texlive-luatex texlive-latex-recommended \
#     texlive-latex-extra texlive-lang-cyrillic lmodern fonts-dejavu-core
# Made with Debian 12's pandoc 2.17.1.1-2~deb12u1, LuaHBTeX 1.15.0 (texlive-binaries 2022.20220321.62855-5.1+deb12u2,
# texlive-luatex 2022.20230122-3) and fonts-dejavu-core 2.37-6, python3 to split the cache file; SRC may name an
# unpacked copy of the handbook (the set was made from kalarm's .deb unpacked under /tmp). The PDF is not
# byte-reproducible (LuaTeX writes a creation date and an ID), its text is; the file the set was written
# on is committed beside this script.
set -e
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/doc/HTML/ru/kalarm}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
bzcat "$SRC/index.cache.bz2" > "$TMP/index.cache"
python3 - "$TMP" <<'PY'
import sys
from pathlib import Path
tmp = Path(sys.argv[1])
text = (tmp / "index.cache").read_text(encoding="utf-8")
names = []
for n, chunk in enumerate(text.split('<FILENAME filename="')[1:]):
    name, body = chunk.split('">', 1)
    (tmp / f"{n:02d}-{name}").write_text(body.replace("</FILENAME>", ""), encoding="utf-8")
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
function Span(el) el.attributes.lang = nil return el end
function Image(el) return {} end
function Table(tbl)
  for i, spec in ipairs(tbl.colspecs) do tbl.colspecs[i] = { spec[1], 0.96 / #tbl.colspecs } end
  return tbl
end
LUA
cd "$TMP"
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope -s -f html -t latex --pdf-engine=lualatex \
  --metadata lang=ru --metadata title="Руководство пользователя KAlarm" \
  -V papersize=a4 -V geometry:margin=2cm -V fontsize=11pt \
  -V mainfont="DejaVu Serif" -V sansfont="DejaVu Sans" -V monofont="DejaVu Sans Mono" \
  -o "$OUT/kalarm-handbook-ru.pdf" $(cat pages)
rm -r "$TMP"
