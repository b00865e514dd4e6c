#!/bin/sh
# Set AC's document: four chapters of the Russian handbook of KMail, KDE's e-mail client («Руководство
# пользователя KMail», 5.14.2, KDE Applications 20.04.2): «Введение», «Начало работы», «Вопросы и ответы»
# and «Устранение неполадок KMail» — the part a user reads to set up a first account and to get out of
# trouble — as one EPUB 3 book made by xsltproc with the standard DocBook XSL stylesheets (epub3/chunk.xsl).
# The book is the shipped index.docbook with the entity references of the other four chapters («Использование
# KMail», «Настройка KMail», «Меню», «Авторы и лицензия») taken out; the chapter files are used as shipped.
# KDE's DTD and entities (&kmail;, the translators' names, the licence notice) resolve through the XML
# catalog of kdoctools5; nothing is fetched from the network. The handbook's screenshots are the English ones
# (KDE's help shows them for every language); they are copied from kmail's English folder into the book.
#   apt-get install -y --no-install-recommends kmail kdoctools5 docbook-xsl docbook-xml xsltproc python3
# Made with Debian 12's kmail 4:22.12.3-1 (its .deb unpacked under /tmp; SRC and FIG may name such a copy),
# kdoctools5 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, xsltproc (libxslt 1.1.35) and python3 (zipfile). The
# stylesheets write the time of the run into the package document (dcterms:modified); the script puts the
# handbook's date (2020-08-14) there instead and gives every zip entry that date too, so two runs give the
# same bytes.
set -eu
SRC=${SRC:-/usr/share/doc/HTML/ru/kmail2}
FIG=${FIG:-/usr/share/doc/HTML/en/kmail2}
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cp "$SRC"/intro.docbook "$SRC"/getting-started.docbook "$SRC"/faq.docbook "$SRC"/troubleshooting.docbook "$TMP"/
grep -v -e '^&kmail-using-kmail;' -e '^&kmail-configure;' -e '^&kmail-menus;' -e '^&kmail-credits-and-licenses;' \
  "$SRC/index.docbook" > "$TMP/index.docbook"
cat > "$TMP/epub.xsl" <<'XSL'
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">
  <xsl:import href="/usr/share/xml/docbook/stylesheet/docbook-xsl/epub3/chunk.xsl"/>
</xsl:stylesheet>
XSL
mkdir "$TMP/book"
(cd "$TMP/book" && XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet "$TMP/epub.xsl" "$TMP/index.docbook" > "$TMP/xsltproc.log" 2>&1) || { cat "$TMP/xsltproc.log"; exit 1; }
for png in $(sed -n 's/.*href="\([^"]*\.png\)".*/\1/p' "$TMP/book/OEBPS/package.opf"); do
  cp "$FIG/$png" "$TMP/book/OEBPS/$png"
done
python3 - "$TMP/book" "$OUT/kmail-handbook-ru.epub" <<'PY'
import os, re, sys, zipfile
book, target = sys.argv[1], sys.argv[2]
opf = os.path.join(book, "OEBPS", "package.opf")
text = open(opf, encoding="utf-8").read()
text = re.sub(r'(<meta property="dcterms:modified">)[^<]*(</meta>)', r"\g<1>2020-08-14T00:00:00Z\g<2>", text)
open(opf, "w", encoding="utf-8").write(text)
names = sorted(os.path.relpath(os.path.join(root, f), book) for root, _, files in os.walk(book) for f in files)
names.remove("mimetype")
with zipfile.ZipFile(target, "w") as z:
    for name, method in [("mimetype", zipfile.ZIP_STORED)] + [(n, zipfile.ZIP_DEFLATED) for n in names]:
        info = zipfile.ZipInfo(name, date_time=(2020, 8, 14, 0, 0, 0))
        info.compress_type = method
        info.external_attr = 0o644 << 16
        z.writestr(info, open(os.path.join(book, name), "rb").read())
PY
