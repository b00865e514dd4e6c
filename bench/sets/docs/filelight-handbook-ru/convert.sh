#!/bin/sh
# Set CE's document: the whole Russian handbook of Filelight, KDE's disk usage viewer («Руководство пользователя
# Filelight»: what it shows, its settings' two tabs, starting it, scanning folders and reading the file map, and the
# list of its commands with their keys), from the DocBook source that filelight ships
# (/usr/share/doc/HTML/ru/filelight/index.docbook), made into one PowerPoint presentation by LibreOffice Impress, where
# the earlier PPTX file (R's) was written by pandoc. xsltproc builds the DocBook into one HTML page with the standard
# DocBook XSL stylesheets (html/docbook.xsl, output in UTF-8, no table of contents; KDE's DTD and entities through the
# XML catalog of kdoctools5, nothing fetched from the network), as set AX's script; sed removes the <img> tags (the four
# screenshots are not shipped in the Russian folder). pandoc reads the page into its document tree (-f html -t json)
# with a Lua filter that keeps the links' and spans' text, drops the pictures and the rule under the title page and
# unwraps the stylesheets' divs. python3 (standard library) lays the tree out as slides in a flat OpenDocument
# presentation (.fodp) of the script's own: the title page a title slide (the handbook's title, then the authors,
# translators, release line, copyright lines and licence notice as the subtitle's paragraphs), then a slide for the
# abstract, for each chapter and for each section of a chapter, and for each of the three menus of the list of commands
# (a bold paragraph that stands alone, as the variable lists' titles do); a chapter without text before its first
# section is a slide with its title alone. On a slide the title is the title placeholder and the rest the outline's
# paragraphs: paragraphs, list items, the subsections' titles, the example's command and the commands' names at the
# first level, each command's description at the second. LibreOffice Impress 7.4 opens the presentation and saves it as
# PPTX (`--convert-to "pptx:Impress MS PowerPoint 2007 XML"`, headless): its own master, layouts and theme, each
# slide's title and outline as PowerPoint placeholders, the outline's levels as the paragraphs' lvl, the text in Arial
# marked ru-RU, the outline shrunk to fit (normAutofit). The script checks that 17 slides are written.
# Reproducibility. The presentation's creation and modification dates are set to 2026-11-29 00:00:00 in the .fodp's
# meta, and LibreOffice writes them into docProps/core.xml. It stamps each zip entry with the time of the run, so
# soffice runs under faketime with the wall clock stopped at 2026-11-29 00:00:00 UTC (an absolute time, without «@»;
# the monotonic clock left real by FAKETIME_DONT_FAKE_MONOTONIC=1) and with SAL_RAND_REPEATABLE set, as set AX's
# script. pandoc and LibreOffice run with HOME in the temporary folder. Two runs give the same bytes, also from a copy
# of the source in another folder and with LC_ALL=C.
#   apt-get install -y --no-install-recommends filelight kdoctools5 docbook-xsl docbook-xml xsltproc pandoc python3 \
#     libreoffice-impress-nogui faketime
# Made with Debian 12's filelight 4:22.12.3-1 (its .deb unpacked under /tmp; SRC may name such a copy), kdoctools5
# 5.103.0-1, docbook-xsl 1.79.2+dfsg-2, docbook-xml 4.5-12, xsltproc (libxml 2.9.14, libxslt 1.1.35), pandoc
# 2.17.1.1-2~deb12u1, python3 3.11.2, LibreOffice 7.4.7.2 (libreoffice-impress-nogui 4:7.4.7-1+deb12u14) and faketime /
# libfaketime 0.9.10-2.1.
set -eu
PANDOC=${PANDOC:-pandoc}
PYTHON=${PYTHON:-/usr/bin/python3}
SRC=${SRC:-/usr/share/doc/HTML/ru/filelight}
SRC=$(cd "$SRC" && pwd)
OUT=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/html" "$TMP/out" "$TMP/home"
cat > "$TMP/utf8.xsl" <<'XSL'
<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">
  <xsl:import href="/usr/share/xml/docbook/stylesheet/docbook-xsl/html/docbook.xsl"/>
  <xsl:output method="html" encoding="UTF-8" indent="no"/>
</xsl:stylesheet>
XSL
cat > "$TMP/filter.lua" <<'LUA'
local function unwrap(el) return el.content end
local function drop() return {} end
return {{Pandoc = function(doc)
  doc = doc:walk({Span = unwrap, Link = unwrap, Image = drop, HorizontalRule = drop,
                  Code = function(el) return pandoc.Str(el.text) end})
  return doc:walk({Div = unwrap})
end}}
LUA
XML_CATALOG_FILES="/usr/share/kf5/kdoctools/customization/catalog.xml /etc/xml/catalog" \
  xsltproc --nonet --stringparam generate.toc '' -o "$TMP/page.html" "$TMP/utf8.xsl" "$SRC/index.docbook" \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
n=$(grep -o '<div class="chapter"' "$TMP/page.html" | wc -l)
[ "$n" -eq 5 ] || { echo "expected 5 chapters, found $n" >&2; exit 1; }
sed 's/<img [^>]*>//g' "$TMP/page.html" > "$TMP/html/filelight-handbook-ru.html"
HOME="$TMP/home" "$PANDOC" -f html -t json --lua-filter="$TMP/filter.lua" -o "$TMP/html/page.json" \
  "$TMP/html/filelight-handbook-ru.html"
"$PYTHON" - "$TMP/html/page.json" "$TMP/html/filelight-handbook-ru.fodp" <<'PY'
import json, sys
from xml.sax.saxutils import escape

def text_of(inlines):
    out = []
    for el in inlines:
        kind = el["t"]
        if kind == "Str":
            out.append(el["c"])
        elif kind in ("Space", "SoftBreak", "LineBreak"):
            out.append(" ")
        elif kind in ("Emph", "Strong", "Underline", "SmallCaps", "Strikeout", "Superscript", "Subscript"):
            out.append(text_of(el["c"]))
        elif kind == "Quoted":
            marks = "«»" if el["c"][0]["t"] == "DoubleQuote" else "‘’"
            out.append(marks[0] + text_of(el["c"][1]) + marks[1])
        else:
            sys.exit("unexpected inline " + kind)
    return "".join(out).strip()

source, target = sys.argv[1:]
with open(source, encoding="utf-8") as f:
    blocks = json.load(f)["blocks"]
slides = []  # [title, [(level, text), ...]]
for block in blocks:
    kind, content = block["t"], block.get("c")
    if kind == "Header":
        level, (_, classes, _), inlines = content
        if level <= 2 and not {"author", "othercredit"} & set(classes):
            slides.append([text_of(inlines), []])
        else:
            slides[-1][1].append((1, text_of(inlines)))
    elif kind in ("Para", "Plain"):
        if len(content) == 1 and content[0]["t"] == "Strong":
            slides.append([text_of(content), []])
        elif text_of(content):
            slides[-1][1].append((1, text_of(content)))
    elif kind == "CodeBlock":
        slides[-1][1] += [(1, line) for line in content[1].split("\n")]
    elif kind == "BulletList":
        slides[-1][1] += [(1, text_of(b["c"])) for item in content for b in item]
    elif kind == "DefinitionList":
        for term, descriptions in content:
            slides[-1][1].append((1, text_of(term)))
            slides[-1][1] += [(2, text_of(b["c"])) for d in descriptions for b in d]
    else:
        sys.exit("unexpected block " + kind)
assert len(slides) == 17, len(slides)

def frame(cls, style, x, y, w, h, paragraphs, outline):
    parts = []
    for level, text in paragraphs:
        p = f"<text:p>{escape(text)}</text:p>"
        for _ in range(level if outline else 0):
            p = f"<text:list><text:list-item>{p}</text:list-item></text:list>"
        parts.append(p)
    return (f'<draw:frame presentation:style-name="{style}" draw:layer="layout" svg:width="{w}cm" svg:height="{h}cm" '
            f'svg:x="{x}cm" svg:y="{y}cm" presentation:class="{cls}" presentation:user-transformed="true">'
            f'<draw:text-box>{"".join(parts)}</draw:text-box></draw:frame>\n')

pages = []
for number, (title, paragraphs) in enumerate(slides, 1):
    if number == 1:
        body = (frame("title", "pr1", 1.4, 1.0, 25.2, 3.0, [(1, title)], False)
                + frame("subtitle", "pr2", 1.4, 4.6, 25.2, 10.6, paragraphs, False))
    else:
        body = frame("title", "pr1", 1.4, 0.6, 25.2, 2.6, [(1, title)], False)
        if paragraphs:
            body += frame("outline", "pr3", 1.4, 3.6, 25.2, 11.6, paragraphs, True)
    pages.append(f'<draw:page draw:name="page{number}" draw:master-page-name="Default">\n{body}</draw:page>\n')

ns = " ".join(f'xmlns:{p}="{u}"' for p, u in (
    ("office", "urn:oasis:names:tc:opendocument:xmlns:office:1.0"),
    ("style", "urn:oasis:names:tc:opendocument:xmlns:style:1.0"),
    ("text", "urn:oasis:names:tc:opendocument:xmlns:text:1.0"),
    ("draw", "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"),
    ("fo", "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"),
    ("dc", "http://purl.org/dc/elements/1.1/"),
    ("meta", "urn:oasis:names:tc:opendocument:xmlns:meta:1.0"),
    ("svg", "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"),
    ("presentation", "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0")))
ru = 'fo:language="ru" fo:country="RU"'
shrink = 'draw:fill="none" draw:stroke="none" draw:fit-to-size="false" style:shrink-to-fit="true"'
document = f'''<?xml version="1.0" encoding="UTF-8"?>
<office:document {ns} office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:meta><dc:title>{escape(slides[0][0])}</dc:title><dc:language>ru-RU</dc:language><meta:creation-date>2026-11-29T00:00:00</meta:creation-date><dc:date>2026-11-29T00:00:00</dc:date></office:meta>
<office:styles>
<style:default-style style:family="graphic"><style:text-properties {ru}/></style:default-style>
<style:style style:name="Default-title" style:family="presentation"><style:paragraph-properties fo:text-align="center"/><style:text-properties fo:font-size="32pt" {ru}/></style:style>
<style:style style:name="Default-subtitle" style:family="presentation"><style:paragraph-properties fo:text-align="center"/><style:text-properties fo:font-size="20pt" {ru}/></style:style>
<style:style style:name="Default-outline1" style:family="presentation"><style:text-properties fo:font-size="24pt" {ru}/></style:style>
<style:style style:name="Default-outline2" style:family="presentation" style:parent-style-name="Default-outline1"><style:text-properties fo:font-size="20pt"/></style:style>
</office:styles>
<office:automatic-styles>
<style:page-layout style:name="PM1"><style:page-layout-properties fo:page-width="28cm" fo:page-height="15.75cm" style:print-orientation="landscape"/></style:page-layout>
<style:style style:name="pr1" style:family="presentation" style:parent-style-name="Default-title"><style:graphic-properties draw:fill="none" draw:stroke="none"/></style:style>
<style:style style:name="pr2" style:family="presentation" style:parent-style-name="Default-subtitle"><style:graphic-properties {shrink}/></style:style>
<style:style style:name="pr3" style:family="presentation" style:parent-style-name="Default-outline1"><style:graphic-properties {shrink}/></style:style>
</office:automatic-styles>
<office:master-styles><style:master-page style:name="Default" style:page-layout-name="PM1"/></office:master-styles>
<office:body><office:presentation>
{"".join(pages)}</office:presentation></office:body>
</office:document>
'''
with open(target, "w", encoding="utf-8") as f:
    f.write(document)
PY
HOME="$TMP/home" SAL_RAND_REPEATABLE=1 TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "2026-11-29 00:00:00" \
  soffice -env:UserInstallation="file://$TMP/profile" --headless \
  --convert-to "pptx:Impress MS PowerPoint 2007 XML" --outdir "$TMP/out" "$TMP/html/filelight-handbook-ru.fodp" \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
n=$(unzip -Z1 "$TMP/out/filelight-handbook-ru.pptx" | grep -c '^ppt/slides/slide[0-9]*\.xml$')
[ "$n" -eq 17 ] || { echo "expected 17 slides, found $n" >&2; exit 1; }
cp "$TMP/out/filelight-handbook-ru.pptx" "$OUT/filelight-handbook-ru.pptx"
test -s "$OUT/filelight-handbook-ru.pptx"
