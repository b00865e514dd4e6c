#!/bin/sh
# Set U's document: the whole Russian handbook of KTurtle 22.12.3 («Руководство пользователя KTurtle»,
# kturtle 4:22.12.3-1, /usr/share/doc/HTML/ru/kturtle/index.cache.bz2: the handbook's DocBook rendered
# to HTML by KDE's meinproc5, all pages in one file), split into its 20 pages and rewritten by pandoc
# as one Markdown file (GitHub-flavoured, no raw HTML, no line wrapping, so that each paragraph or list
# item is one line), the pages in the order they have in the handbook; the KDE header, the navigation
# bars, the footer («Вам есть что добавить на эту страницу?»), the table of contents and the pictures
# left out, nothing else.
#   apt-get install -y --no-install-recommends kturtle pandoc
# Made with Debian 12's pandoc 2.17.1.1-2~deb12u1 and python3 (to split the cache file); SRC may name an
# unpacked copy of the handbook (the set was made from kturtle's .deb unpacked under /tmp). Two runs gave
# the same bytes; the file is committed beside this script all the same.
set -e
PANDOC=${PANDOC:-pandoc}
SRC=${SRC:-/usr/share/doc/HTML/ru/kturtle}
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
function Span(el) return el.content end
function Image(el) return {} end
LUA
cd "$TMP"
"$PANDOC" --lua-filter="$TMP/filter.lua" --file-scope --wrap=none -f html -t gfm-raw_html \
  -o "$OUT/kturtle-handbook-ru.md" $(cat pages)
rm -r "$TMP"
