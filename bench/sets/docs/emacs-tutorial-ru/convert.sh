#!/bin/sh
# Set Z's document: the Russian tutorial of GNU Emacs («Учебник Emacs», etc/tutorials/TUTORIAL.ru, the
# text Emacs opens with C-h t in a Russian locale; translated by Alex Ott), from emacs-common
# 1:28.2+1-15+deb12u4 (Debian 12), /usr/share/emacs/28.2/etc/tutorials/TUTORIAL.ru. It is plain UTF-8
# text, lines filled at 76 columns, and is committed as it is shipped, byte for byte, under a .txt name.
#   apt-get install -y --no-install-recommends emacs-common
# (or its .deb unpacked under /tmp; SRC may name such a copy)
set -eu
SRC=${SRC:-/usr/share/emacs/28.2/etc/tutorials}
OUT=$(cd "$(dirname "$0")" && pwd)
cp "$SRC/TUTORIAL.ru" "$OUT/emacs-tutorial-ru.txt"
chmod 644 "$OUT/emacs-tutorial-ru.txt"
