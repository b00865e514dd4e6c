#!/bin/sh
# Set O's document: the Russian help of Midnight Commander (mc-data 3:4.8.29-2, Debian 12,
# /usr/share/mc/help/mc.hlp.ru, made by man2hlp from the Russian mc(1)) as plain UTF-8 text.
#
#   apt-get install -y --no-install-recommends mc-data
#   sh bench/sets/docs/mc-help-ru/convert.sh
#
# mc's help viewer reads control characters as markup; they are removed, nothing is rewritten:
#   \x04[NODE]            start of a help node: dropped (the English node id), a blank line put instead;
#                         every node's own first line is its Russian title
#   \x01TEXT\x02NODE\x03  a link: TEXT kept, the target node id dropped
#   \x05...\x06           text in the terminal's line-drawing character set (the ASCII-art logo of
#                         the node [main]): dropped
#   \x07                  where the viewer prints mc's version: dropped
#   \x08 \x0b \x14        bold, normal, italic: dropped
#   \x04 + trailer        after the last node: an Emacs "Local variables" block, dropped
# The two licence nodes are left out: [Лицензия (оригинал на английском)] (the GNU GPL v3 in
# English, 34,876 characters) and [Лицензия] (one line pointing to it). Every other node is kept,
# in the file's order. The output is byte-reproducible.
set -eu
SRC=${SRC:-/usr/share/mc/help/mc.hlp.ru}
OUT=${OUT:-$(dirname "$0")/mc-help-ru.txt}
python3 - "$SRC" "$OUT" <<'PY'
import re, sys
source, target = sys.argv[1], sys.argv[2]
text = open(source, encoding="utf-8").read()
text = re.sub(r"\x01([^\x02]*)\x02[^\x03]*\x03", r"\1", text)   # links: keep the link text
text = re.sub(r"\x05[^\x06]*\x06", "", text)                     # line-drawing logo
text = re.sub(r"[\x07\x08\x0b\x14]", "", text)                   # version mark, fonts
text = text[:text.rindex("\x04\nLocal variables:")]          # Emacs trailer after the last node
parts = re.split(r"\x04\[([^\]]*)\]\n?", text)
assert not parts[0].strip(), "text before the first node"
skip = {"Лицензия (оригинал на английском)", "Лицензия"}
nodes = [(name, body) for name, body in zip(parts[1::2], parts[2::2]) if name not in skip]
assert len(nodes) == 82, len(nodes)
out = "\n\n".join(body.strip("\n") for _, body in nodes) + "\n"
assert not re.search(r"[\x00-\x08\x0b-\x1f]", out), "markup left"
open(target, "w", encoding="utf-8").write(out)
PY
sha256sum "$SRC" "$OUT"
