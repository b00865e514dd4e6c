"""The project's Russian evaluation sets as users' stores, filled through the production path.

The shared store and set machinery of bench/retrieval_eval.py, bench/search_gate.py and
bench/answer_eval.py, which need what a user of grove would have: each set's documents ingested by
the `ingest` flow that `grove ingest` runs (parser → chunker → embedder → store), one owner id per
set, and its questions with a way to tell whether a stored chunk holds the answer.

Sets (nothing here edits a set):

* ``texlive`` — bench/sets/texlive_pdf_ru.json, 70 questions over the Russian TeX Live 2021
  guide (PDF, ingested as a file);
* ``gimp`` — bench/sets/gimp_html_ru.json, 70 questions over 25 pages of the Russian GIMP
  manual. When the file parsers take ``.html`` the pages are ingested as files; otherwise
  they are served on 127.0.0.1 and ingested as links (trafilatura, the production link path);
* ``libreoffice`` — bench/sets/libreoffice_html_ru.json, 75 questions over the 97 pages of the
  Russian LibreOffice Calc how-to guides (HTML, ingested like ``gimp``). Written after the
  defaults were chosen on the other three sets, it is the held-out check of those choices;
* ``writer`` — bench/sets/libreoffice_writer_html_ru.json, 80 questions over 122 pages of the
  Russian LibreOffice Writer how-to guides (HTML, ingested like ``gimp``). Written on 2026-11-24,
  after the quote selector and the local model's passages were chosen on the other sets: the
  held-out check of the offline answers (bench/answer_eval.py);
* ``metapost`` — bench/sets/metapost_pdf_ru.json, 40 questions over the Russian MetaPost user's
  manual (a LaTeX-made PDF, 106 pages, ingested as a file), and beside them
  bench/sets/metapost_pdf_silent_ru.json, 15 questions the manual does not answer
  (``EvalSet.silent``). Written on 2026-11-26 for the offline answers of issue 37;
* ``doublecmd`` — bench/sets/doublecmd_docx_ru.json, 40 questions over four pages of the Russian
  Double Commander help converted to DOCX (committed in bench/sets/docs/, ingested as files), and
  bench/sets/doublecmd_docx_silent_ru.json, 15 unanswerable ones. Written with ``metapost``;
* ``texlive-dev``, ``gimp-dev`` — the questions of ``texlive`` and ``gimp`` with, beside each,
  15 questions their documents do not answer (bench/sets/texlive_pdf_silent_ru.json,
  gimp_html_silent_ru.json): the development side of issue 37's offline answers, sets E and F
  being its check;
* ``installguide``, ``omegat`` — sets G and H (bench/sets/debian_install_pdf_ru.json: 30
  questions over chapters 1–8 of the Russian Debian 12 installation guide, a PDF made by
  xdvipdfmx, shipped gzipped and cut to pages 11–79 before it is uploaded (`set_corpus`);
  bench/sets/omegat_html_ru.json: 30 questions over 31 pages of the Russian OmegaT manual, HTML),
  each with 10 unanswerable ones: written on 2026-11-26 by someone who had not seen the answers
  to E and F, after the answer path was tuned on them — the held-out check of issue 37;
* ``flowblade``, ``aptitude`` — sets I and J (bench/sets/flowblade_html_ru.json: 20 questions over the
  14 pages of Flowblade's Russian help, HTML; bench/sets/aptitude_pdf_ru.json: 20 questions over four
  pages of the Russian aptitude manual converted to PDF by LibreOffice, committed in bench/sets/docs/),
  each with 10 unanswerable ones: written on 2026-11-26 after G and H had been read — the next held-out
  check. (The aptitude manual's section headings are among the ``debian`` retrieval set's questions;
  no answer over it had been read.)
* ``mandb``, ``pymorphy2`` — sets K and L (bench/sets/mandb_weasyprint_pdf_ru.json: 20 questions over
  twelve Russian man pages of man-db from manpages-ru, rendered by mandoc and printed to PDF by WeasyPrint,
  committed in bench/sets/docs/; bench/sets/pymorphy2_rst_ru.json: 20 questions over nine reStructuredText
  files of pymorphy2's Russian documentation, committed as .txt and ingested as plain text), each with 10
  unanswerable ones: written on 2026-11-26 after I and J had been read — the next held-out check.
* ``aisleriot``, ``gnomehelp`` — sets M and N (bench/sets/aisleriot_epub_ru.json: 20 questions over the
  Russian AisleRiot manual, the rules of 90 solitaire games, converted from DocBook to one EPUB;
  bench/sets/gnome_help_odt_ru.json: 20 questions over five topics of the Russian GNOME desktop help
  converted to ODT; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable
  ones: written on 2026-11-26 after K and L — the next held-out check.
* ``mchelp``, ``skycultures`` — sets O and P (bench/sets/mc_help_txt_ru.json: 20 questions over the Russian
  help of Midnight Commander converted to plain text; bench/sets/stellarium_skycultures_fb2_ru.json: 20
  questions over Stellarium's 32 Russian sky-culture descriptions, star lore of many peoples, joined into one
  FictionBook 2 book; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable
  ones: written on 2026-11-27 after M and N — the next held-out check.
* ``evolution``, ``evince`` — sets Q and R (bench/sets/evolution_help_rtf_ru.json: 20 questions over the
  calendar, contacts, tasks and memos pages of the Russian Evolution help, joined into four RTF files;
  bench/sets/evince_help_pptx_ru.json: 20 questions over the whole Russian help of the Evince document viewer,
  one PPTX slide per page; both committed in bench/sets/docs/ and ingested as files), each with 10
  unanswerable ones: written on 2026-11-27 after O and P — the next held-out check.
* ``terminal``, ``seahorse`` — sets S and T (bench/sets/gnome_terminal_help_html_ru.json: 20 questions over the
  whole Russian help of GNOME Terminal, one HTML file per page; bench/sets/seahorse_help_pdf_ru.json: 20
  questions over the whole Russian help of Seahorse («Пароли и ключи»), printed to one PDF by WeasyPrint; both
  committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-27
  after Q and R — the next held-out check.
* ``kturtle``, ``kalarm`` — sets U and V (bench/sets/kturtle_handbook_md_ru.json: 20 questions over the whole
  Russian handbook of KTurtle, KDE's educational programming environment, rewritten from KDE's HTML as one
  Markdown file; bench/sets/kalarm_handbook_pdf_ru.json: 20 questions over the whole Russian handbook of the
  KAlarm alarm scheduler, typeset to one PDF by pandoc and LuaLaTeX; both committed in bench/sets/docs/ and
  ingested as files), each with 10 unanswerable ones: written on 2026-11-27 after S and T — the next held-out
  check.
* ``marble``, ``maintguide`` — sets W and X (bench/sets/marble_handbook_docx_ru.json: 20 questions over the whole
  Russian handbook of Marble, KDE's virtual globe and atlas, joined from KDE's HTML into one DOCX by pandoc;
  bench/sets/maint_guide_odt_ru.json: 20 questions over chapters 1-3 of the Russian Debian New Maintainers' Guide,
  converted from its XHTML into one ODT by LibreOffice; both committed in bench/sets/docs/ and ingested as files),
  each with 10 unanswerable ones: written on 2026-11-27 after U and V — the next held-out check.
* ``kmplot``, ``emacs`` — sets Y and Z (bench/sets/kmplot_handbook_html_ru.json: 20 questions over the whole
  Russian handbook of KmPlot, KDE's mathematical function plotter, built from its DocBook source into one HTML page
  by xsltproc and the DocBook XSL stylesheets; bench/sets/emacs_tutorial_txt_ru.json: 20 questions over the Russian
  tutorial of GNU Emacs, the plain text file Emacs ships; both committed in bench/sets/docs/ and ingested as
  files), each with 10 unanswerable ones: written on 2026-11-27 after W and X — the next held-out check.
* ``sysmonitor``, ``rhythmbox`` — sets AA and AB (bench/sets/system_monitor_help_pdf_ru.json: 20 questions over the
  whole Russian help of GNOME System Monitor, printed to one PDF by headless Chromium;
  bench/sets/rhythmbox_help_html_ru.json: 20 questions over the whole Russian help of the Rhythmbox music player, built
  from its DocBook into one HTML page per section by the DocBook XSL chunking stylesheet; both committed in
  bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-28 after Y and Z — the
  next held-out check.
* ``kmail``, ``gnote`` — sets AC and AD (bench/sets/kmail_handbook_epub_ru.json: 20 questions over four chapters of the
  Russian handbook of the KMail e-mail client — introduction, getting started, FAQ, troubleshooting — built from its
  DocBook into one EPUB by the DocBook XSL stylesheets; bench/sets/gnote_help_html_ru.json: 20 questions over the whole
  Russian help of the Gnote note-taking program, one HTML page per help page as yelp-build writes it; both committed in
  bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-28 after AA and AB — the
  next held-out check.
* ``gwenview``, ``dolphin`` — sets AE and AF (bench/sets/gwenview_handbook_html_ru.json: 20 questions over the whole
  Russian handbook of the Gwenview image viewer, built from its DocBook into one HTML page per chapter and section by
  the DocBook XSL chunking stylesheet; bench/sets/dolphin_handbook_pdf_ru.json: 20 questions over the whole Russian
  handbook of the Dolphin file manager, built from its DocBook into one HTML page and printed to PDF by LibreOffice;
  both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-28
  after AC and AD — the next held-out check.
* ``konsole``, ``akregator`` — sets AG and AH (bench/sets/konsole_handbook_html_ru.json: 20 questions over the whole
  Russian handbook of the Konsole terminal emulator, its DocBook split into 16 HTML pages by xsltproc with the DocBook
  XSL chunking stylesheet; bench/sets/akregator_handbook_pdf_ru.json: 20 questions over the whole Russian handbook of
  the Akregator news feed reader, built from its DocBook into one HTML page and printed to PDF by LibreOffice; both
  committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-28 after
  AE and AF, held out.
* ``kolourpaint``, ``okular`` — sets AI and AJ (bench/sets/kolourpaint_handbook_pdf_ru.json: 20 questions over the
  whole Russian handbook of the KolourPaint paint program, its DocBook typeset by LaTeX (dblatex with its XeTeX
  backend) into one PDF; bench/sets/okular_handbook_odt_ru.json: 20 questions over the whole Russian handbook of the
  Okular document viewer, built from its DocBook into one HTML page and converted to one ODT by LibreOffice; both
  committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-28 after
  AG and AH, held out. Their answerable questions also list `facts` (what a correct answer must state), which
  nothing here reads.
* ``kcalc``, ``kompare`` — sets AK and AL (bench/sets/kcalc_handbook_pdf_ru.json: 20 questions over the whole Russian
  handbook of the KCalc calculator, its DocBook typeset by LaTeX (dblatex with its XeTeX backend) into one PDF;
  bench/sets/kompare_handbook_odt_ru.json: 20 questions over the whole Russian handbook of the Kompare diff viewer,
  built from its DocBook into one HTML page and converted to one ODT by LibreOffice; both committed in bench/sets/docs/
  and ingested as files), each with 10 unanswerable ones: written on 2026-11-28 after AI and AJ, held out, with
  `facts` as AI and AJ.
* ``kwordquiz``, ``kig`` — sets AM and AN (bench/sets/kwordquiz_handbook_pdf_ru.json: 20 questions over the whole
  Russian handbook of the KWordQuiz vocabulary trainer, built from its DocBook into one HTML page, opened by
  LibreOffice Writer and exported to one PDF; bench/sets/kig_handbook_docx_ru.json: 20 questions over the whole Russian
  handbook of the Kig interactive geometry program, built from its DocBook into one HTML page and converted to one DOCX
  by pandoc; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on
  2026-11-28 after AK and AL, held out, with `facts` as AI and AJ.
* ``kgpg``, ``juk`` — sets AO and AP (bench/sets/kgpg_handbook_html_ru.json: 20 questions over the whole Russian
  handbook of KGpg, KDE's front end to GnuPG, its DocBook split into 11 HTML pages by xsltproc with the DocBook XSL
  chunking stylesheet; bench/sets/juk_handbook_pdf_ru.json: 20 questions over the whole Russian handbook of the JuK
  music player, its DocBook typeset by LaTeX (dblatex with its XeTeX backend) into one PDF; both committed in
  bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-28 after AM and AN, held
  out, with `facts` as AI and AJ.
* ``kolf``, ``step`` — sets AQ and AR (bench/sets/kolf_handbook_pdf_ru.json: 20 questions over the whole Russian
  handbook of the Kolf miniature golf game, its DocBook read by pandoc and typeset by XeLaTeX into one PDF;
  bench/sets/step_handbook_docx_ru.json: 20 questions over the whole Russian handbook of the Step physics simulator,
  built from its DocBook into one HTML page and converted to one DOCX by LibreOffice; both committed in
  bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-28 after AO and AP, held
  out, with `facts` as AI and AJ.
* ``spectacle``, ``kinfocenter`` — sets AS and AT (bench/sets/spectacle_handbook_html_ru.json: 20 questions over the
  whole Russian handbook of Spectacle, KDE's screenshot program, its DocBook built into one HTML page by xsltproc
  with the DocBook XSL stylesheets; bench/sets/kinfocenter_handbook_pdf_ru.json: 20 questions over the whole Russian
  handbook of KInfoCenter, KDE Plasma's system information centre, its DocBook typeset by LaTeX (dblatex with its
  XeTeX backend) into one PDF; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable
  ones: written on 2026-11-28 after AQ and AR, held out, with `facts` as AI and AJ.
* ``krdc``, ``kmouth`` — sets AU and AV (bench/sets/krdc_handbook_docx_ru.json: 20 questions over the whole Russian
  handbook of KRDC, KDE's remote desktop client, built from its DocBook into one HTML page and converted to one DOCX by
  pandoc; bench/sets/kmouth_handbook_pdf_ru.json: 20 questions over the whole Russian handbook of KMouth, KDE's program
  that speaks typed text, built from its DocBook into one HTML page, opened by LibreOffice Writer and exported to one
  PDF; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-28
  after AS and AT, held out, with `facts` as AI and AJ.
* ``kbruch``, ``kmines`` — sets AW and AX (bench/sets/kbruch_handbook_epub_ru.json: 20 questions over the whole
  Russian handbook of KBruch, KDE's program for practising fractions and percentages, built from its DocBook into one
  HTML page and converted to one EPUB by pandoc; bench/sets/kmines_handbook_odt_ru.json: 20 questions over the whole
  Russian handbook of KMines, KDE's Minesweeper, built from its DocBook into one HTML page, opened by LibreOffice Writer
  and saved as one ODT; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable ones:
  written on 2026-11-28 after AU and AV, held out, with `facts` as AI and AJ.
* ``ktouch``, ``skanlite`` — sets AY and AZ (bench/sets/ktouch_handbook_pdf_ru.json: 20 questions over the whole
  Russian handbook of KTouch, KDE's touch-typing tutor, built from its DocBook into one HTML page and printed to one
  PDF by wkhtmltopdf; bench/sets/skanlite_handbook_md_ru.json: 20 questions over the whole Russian handbook of
  Skanlite, KDE's program for scanning images, built from its DocBook into one HTML page and rewritten as one Markdown
  file by pandoc; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written
  on 2026-11-28 after AW and AX, held out, with `facts` as AI and AJ.
* ``fileroller``, ``brasero`` — sets BA and BB (bench/sets/file_roller_help_epub_ru.json: 20 questions over the whole
  Russian help of File Roller, GNOME's archive manager, built from its Mallard pages into one EPUB by yelp-build;
  bench/sets/brasero_help_html_ru.json: 20 questions over the whole Russian help of Brasero, GNOME's disc-burning
  program, its 14 Mallard pages rendered by yelp-build as HTML pages; both committed in bench/sets/docs/ and ingested
  as files), each with 10 unanswerable ones: written on 2026-11-28 after AY and AZ, held out, with `facts` as AI and AJ.
* ``boxes``, ``totem`` — sets BC and BD (bench/sets/gnome_boxes_help_rtf_ru.json: 20 questions over the whole
  Russian help of GNOME Boxes, GNOME's program for virtual machines, its 25 Mallard pages rendered by yelp-build,
  joined into one HTML page and saved as one RTF by LibreOffice Writer; bench/sets/totem_help_fb2_ru.json: 20 questions
  over the whole Russian help of Totem, GNOME's video player, its 19 Mallard pages rendered by yelp-build and joined
  into one FB2 book by pandoc; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable
  ones: written on 2026-11-29 after BA and BB, held out, with `facts` as AI and AJ.
* ``ghex``, ``knights`` — sets BE and BF (bench/sets/ghex_help_txt_ru.json: 20 questions over the whole Russian
  help of GHex, GNOME's hex editor, its 11 Mallard pages rendered by yelp-build and joined into one plain text file by
  pandoc; bench/sets/knights_handbook_md_ru.json: 20 questions over the whole Russian handbook of Knights, KDE's chess
  game, built from its DocBook into one HTML page and rewritten as one Markdown file by html2text; both committed in
  bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-29 after BC and BD, held
  out, with `facts` as AI and AJ.
* ``rocs``, ``kmenuedit`` — sets BG and BH (bench/sets/rocs_handbook_epub_ru.json: 20 questions over the whole
  Russian handbook of Rocs, KDE's graph theory program, built from its DocBook into one HTML page and exported as one
  EPUB by LibreOffice Writer; bench/sets/kmenuedit_handbook_odt_ru.json: 20 questions over the whole Russian handbook
  of KMenuEdit, KDE's editor of the application menu, read from its DocBook by pandoc into one ODT; both committed in
  bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-29 after BE and BF, held
  out, with `facts` as AI and AJ.
* ``kalzium``, ``zenity`` — sets BI and BJ (bench/sets/kalzium_handbook_docx_ru.json: 20 questions over the whole
  Russian handbook of Kalzium, KDE's periodic table of the elements, built from its DocBook into one HTML page and
  saved as one Word document by AbiWord; bench/sets/zenity_help_fb2_ru.json: 20 questions over the whole Russian help
  of Zenity, GNOME's program that shows dialog boxes from shell scripts, its 19 Mallard pages rendered by yelp-build,
  joined into one HTML page and converted to one FB2 book by calibre; both committed in bench/sets/docs/ and ingested
  as files), each with 10 unanswerable ones: written on 2026-11-29 after BG and BH, held out, with `facts` as AI and
  AJ.
* ``epiphany``, ``kmix`` — sets BK and BL (bench/sets/epiphany_help_txt_ru.json: 20 questions over the whole Russian
  help of GNOME Web, GNOME's web browser formerly known as Epiphany, its 22 Mallard pages rendered by yelp-build, joined
  into one HTML page by pandoc and dumped as one plain text file by w3m; bench/sets/kmix_handbook_odt_ru.json: 20
  questions over the whole Russian handbook of KMix, KDE's sound mixer, built from its DocBook into one HTML page and
  saved as one ODT by AbiWord; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable
  ones: written on 2026-11-29 after BI and BJ, held out, with `facts` as AI and AJ.
* ``dejadup``, ``umbrello`` — sets BM and BN (bench/sets/deja_dup_help_docx_ru.json: 20 questions over the whole
  Russian help of Déjà Dup, GNOME's backup program, its 7 Mallard pages rendered by yelp-build, joined into one HTML page
  by pandoc and converted to one Word document by calibre; bench/sets/umbrello_handbook_pdf_ru.json: 20 questions over
  chapter 3 of the Russian handbook of Umbrello UML Modeller, KDE's UML diagram program, built from its DocBook into one
  HTML page and printed as one PDF by AbiWord; both committed in bench/sets/docs/ and ingested as files), each with 10
  unanswerable ones: written on 2026-11-29 after BK and BL, held out, with `facts` as AI and AJ.
* ``cervisia``, ``soundjuicer`` — sets BO and BP (bench/sets/cervisia_handbook_pdf_ru.json: 20 questions over
  chapters 1-3 of the Russian handbook of Cervisia, KDE's graphical front end to CVS, built from its DocBook into one
  HTML page and laid out and written as one PDF by MuPDF; bench/sets/sound_juicer_help_rtf_ru.json: 20 questions over
  the whole Russian help of Sound Juicer, GNOME's audio CD ripper, built from its DocBook into one HTML page and
  converted to one RTF by calibre; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable
  ones: written on 2026-11-29 after BM and BN, held out, with `facts` as AI and AJ.
* ``kwave``, ``gbrainy`` — sets BQ and BR (bench/sets/kwave_handbook_pdf_ru.json: 20 questions over chapter 3 of the
  Russian handbook of Kwave, KDE's sound editor, built from its DocBook into one HTML page and laid out and printed as
  one PDF by HTMLDOC; bench/sets/gbrainy_help_html_ru.json: 20 questions over the whole Russian help of gbrainy, GNOME's
  brain teaser game, its 14 Mallard pages rendered by yelp-build and joined and written as one HTML page by pandoc; both
  committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-29 after BO
  and BP, held out, with `facts` as AI and AJ.
* ``skrooge``, ``cheese`` — sets BS and BT (bench/sets/skrooge_handbook_pdf_ru.json: 20 questions over chapter 2 of
  the Russian handbook of Skrooge, KDE's personal finance manager, built from its DocBook into one HTML page, typeset by
  LaTeX and written as one PDF by Ghostscript from dvips's PostScript; bench/sets/cheese_help_rtf_ru.json: 20 questions
  over the whole Russian help of Cheese, GNOME's webcam program, its 14 Mallard pages rendered by yelp-build, joined
  into one HTML page by pandoc and saved as one RTF by AbiWord; both committed in bench/sets/docs/ and ingested as
  files), each with 10 unanswerable ones: written on 2026-11-29 after BQ and BR, held out, with `facts` as AI and AJ.
* ``konversation``, ``gucharmap`` — sets BU and BV (bench/sets/konversation_handbook_pdf_ru.json: 20 questions over
  sections 1-16 of chapter 2 of the Russian handbook of Konversation, KDE's IRC client, transformed from its DocBook
  into XSL-FO by the DocBook XSL-FO stylesheets and laid out and written as one PDF by Apache FOP;
  bench/sets/gucharmap_help_txt_ru.json: 20 questions over the whole Russian help of the GNOME Character Map, built
  from its DocBook into one HTML page and saved as one plain text file by LibreOffice Writer; both committed in
  bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-29 after BS and BT, held
  out, with `facts` as AI and AJ.
* ``tellico``, ``kgeography`` — sets BW and BX (bench/sets/tellico_handbook_pdf_ru.json: 20 questions over chapter 2
  of the Russian handbook of Tellico, KDE's collection manager, built from its DocBook into one HTML page, converted to
  AsciiDoc by pandoc and laid out and written as one PDF by Asciidoctor PDF; bench/sets/kgeography_handbook_html_ru.json:
  20 questions over the whole Russian handbook of KGeography, KDE's geography trainer, built from its DocBook into one
  HTML page, converted to reStructuredText by pandoc and written as one HTML page by Docutils; both committed in
  bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on 2026-11-29 after BU and BV, held
  out, with `facts` as AI and AJ.
* ``glade``, ``kiten`` — sets BY and BZ (bench/sets/glade_help_html_ru.json: 20 questions over the whole Russian help
  of Glade, GNOME's user interface designer, built from its DocBook into one HTML page, converted to AsciiDoc by pandoc
  and written as one HTML page by Asciidoctor; bench/sets/kiten_handbook_txt_ru.json: 20 questions over the whole
  Russian handbook of Kiten, KDE's Japanese reference and study tool, built from its DocBook into one HTML page and
  converted into one plain text file by calibre; both committed in bench/sets/docs/ and ingested as files), each with
  10 unanswerable ones: written on 2026-11-29 after BW and BX, held out, with `facts` as AI and AJ.
* ``inkscape``, ``mkvextract`` — sets CA and CB (bench/sets/inkscape_tutorial_epub_ru.json: 20 questions over the
  Russian basic tutorial of Inkscape, the vector graphics editor, read from the text of its SVG drawing into one XHTML
  page and converted into one EPUB book by calibre; bench/sets/mkvextract_man_md_ru.json: 20 questions over the Russian
  manual page of mkvextract, MKVToolNix's program that extracts tracks from Matroska files, read by pandoc's man reader
  into one HTML fragment and converted into one Markdown file by kramdown; both committed in bench/sets/docs/ and
  ingested as files), each with 10 unanswerable ones: written on 2026-11-29 after BY and BZ, held out, with `facts` as
  AI and AJ.
* ``nmap``, ``xxkb`` — sets CC and CD (bench/sets/nmap_man_odt_ru.json: 20 questions over six sections of the Russian
  manual page of Nmap, the network exploration tool and port scanner, read by pandoc's man reader into one HTML page and
  written as one ODT by Qt's own ODF writer; bench/sets/xxkb_readme_docx_ru.json: 20 questions over the Russian README
  of xxkb, an indicator and switcher of keyboard layouts for X11, decoded from KOI8-R and written as one DOCX by
  python-docx; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on
  2026-11-29 after CA and CB, held out, with `facts` as AI and AJ.
* ``filelight``, ``ksystemlog`` — sets CE and CF (bench/sets/filelight_handbook_pptx_ru.json: 20 questions over the
  whole Russian handbook of Filelight, KDE's disk usage viewer, built from its DocBook into one HTML page, laid out as
  the slides of a flat OpenDocument presentation and saved as one PPTX by LibreOffice Impress;
  bench/sets/ksystemlog_handbook_rtf_ru.json: 20 questions over the whole Russian handbook of KSystemLog, KDE's system
  log viewer, built from its DocBook into one HTML page, written as LaTeX by pandoc and converted into one RTF file by
  latex2rtf; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on
  2026-11-29 after CC and CD, held out, with `facts` as AI and AJ.
* ``kget``, ``minuet`` — sets CG and CH (bench/sets/kget_handbook_txt_ru.json: 20 questions over the whole Russian
  handbook of KGet, KDE's download manager, built from its DocBook into one HTML page and dumped as one plain text file
  by Lynx; bench/sets/minuet_handbook_html_ru.json: 20 questions over the whole Russian handbook of Minuet, KDE's music
  education program, built into one HTML page, written as CommonMark by pandoc and converted into one HTML page by
  cmark; both committed in bench/sets/docs/ and ingested as files), each with 10 unanswerable ones: written on
  2026-11-29 after CE and CF, held out, with `facts` as AI and AJ.
* ``debian`` — bench/datasets.py's Debian FAQ set (161 questions: FAQ questions and section
  headings of the Russian Debian FAQ and aptitude manual). The passages of each source file
  are joined back into one text file and ingested; a chunk holds the answer when at least
  half of the chunk, or half of the answer, lies in their overlap (chunks are located in
  the document's normalised text). By default only the FAQ and aptitude files are ingested
  — the man pages the builder adds as distractors are 70 % of its text and would triple
  the ingestion time on this machine; ``with_distractors=True`` adds them (bench/retrieval_eval
  always does).

For the needle sets a chunk holds the answer when it contains one of the question's needles
after the sets' normalisation (soft hyphens dropped, whitespace runs collapsed). An unanswerable
question (``answerable: false`` in a set's silent file) has no needles: no chunk holds its answer.
A set's document path may be relative to bench/sets/ (the committed DOCX files). The sets'
SHA256SUMS and each document's sha256 are checked before anything runs.

What the production path wrote for each document is cached in ``.grove/cache/retrieval-eval/``
(the document row and its chunk rows, generated columns left to Postgres), keyed by the
document's sha256, the ingestion settings and a hash of the ingestion code, so a change to
any of them ingests again. Every bench shares these stores.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import pickle
import re
import shutil
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SETS_DIR = Path(__file__).resolve().parent / "sets"
CACHE_DIR = PROJECT_ROOT / ".grove" / "cache" / "retrieval-eval"
# The code a document passes through on its way into Postgres; its hash is part of the cache key.
INGESTION_CODE = ("flows/ingest.py", "nodes/ingestion/parse_files.py", "nodes/ingestion/fetch_url.py", "nodes/ingestion/web/*.py", "nodes/ingestion/chunk_document.py",
                  "nodes/embedding/embedder.py", "nodes/embedding/embedding_model.py", "nodes/store/document_store.py", "grove/core/ingest_types.py", "nodes/ingestion/html_text.py",
                  "nodes/embedding/embedding_runtime.py", "nodes/embedding/onnx_encoder.py", "nodes/embedding/onnx_export.py", "nodes/embedding/calibration.py",
                  "nodes/ingestion/formats/*.py", "nodes/ingestion/ocr.py", "chunking/*.py")
INGESTION_SETTINGS = ("chunking", "chunk_target_chars", "chunk_overlap_chars", "late_window_tokens",
                      "late_window_overlap_tokens", "embedding_model", "embedding_dtype", "embedding_runtime",
                      "embedding_max_tokens", "embedding_document_prompt", "embedding_document_title_prompt",
                      "chunk_merge_chars", "chunk_context")
SET_NAMES = ("texlive", "gimp", "debian", "libreoffice", "writer", "metapost", "doublecmd", "texlive-dev", "gimp-dev",
             "installguide", "omegat", "flowblade", "aptitude", "mandb", "pymorphy2", "aisleriot", "gnomehelp",
             "mchelp", "skycultures", "evolution", "evince", "terminal", "seahorse", "kturtle", "kalarm",
             "marble", "maintguide", "kmplot", "emacs", "sysmonitor", "rhythmbox", "kmail", "gnote",
             "gwenview", "dolphin", "konsole", "akregator", "kolourpaint", "okular", "kcalc", "kompare",
             "kwordquiz", "kig", "kgpg", "juk", "kolf", "step", "spectacle", "kinfocenter", "krdc", "kmouth",
             "kbruch", "kmines", "ktouch", "skanlite", "fileroller", "brasero", "boxes", "totem",
             "ghex", "knights", "rocs", "kmenuedit", "kalzium", "zenity", "epiphany", "kmix",
             "dejadup", "umbrello", "cervisia", "soundjuicer", "kwave", "gbrainy", "skrooge", "cheese",
             "konversation", "gucharmap", "tellico", "kgeography", "glade", "kiten", "inkscape", "mkvextract",
             "nmap", "xxkb", "filelight", "ksystemlog", "kget", "minuet")
# What the benches ask when no set is named: the sets as they were before metapost and doublecmd.
DEFAULT_SET_NAMES = ("texlive", "gimp", "debian", "libreoffice", "writer")
OWNERS = {name: 8_000_000 + i for i, name in enumerate(SET_NAMES)}
INGEST_BATCH = 40

_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    """The sets' matching rule: soft hyphens dropped, whitespace runs (no-break ones too) → one space."""
    return _WS.sub(" ", text.replace("\u00ad", "")).strip()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------- sets


@dataclass
class Doc:
    """One document to ingest: a local file (PDF, text, HTML) with its sha256."""

    path: Path
    sha256: str
    kind: str  # "file" | "html"


@dataclass
class Question:
    id: str
    text: str
    needles: list[str] = field(default_factory=list)  # needle sets
    answer: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # debian: doc name → spans
    answerable: bool = True  # False: the documents do not answer it (a silent set's question)
    # the key fact's short spans (sets from AI on): what any correct answer states, one alternative each
    facts: list[str] = field(default_factory=list)


@dataclass
class EvalSet:
    name: str
    docs: list[Doc]
    questions: list[Question]
    # debian: normalised text of each ingested document, to locate chunks in it
    texts: dict[str, str] = field(default_factory=dict)
    # questions on the set's topic that its documents do not answer (metapost, doublecmd)
    silent: list[Question] = field(default_factory=list)

    @property
    def needle_based(self) -> bool:
        return not self.texts

    @property
    def owner(self) -> int:
        return OWNERS[self.name]


def verify_frozen_sets() -> None:
    """sha256 of each set's JSON against SHA256SUMS; a mismatch stops the bench."""
    for line in (SETS_DIR / "SHA256SUMS").read_text().splitlines():
        if not line.strip():
            continue
        expected, name = line.split(maxsplit=1)
        actual = sha256_file(SETS_DIR / name.strip().lstrip("*"))
        if actual != expected:
            raise SystemExit(f"bench/sets/{name}: sha256 {actual} does not match SHA256SUMS ({expected}); "
                             "the frozen sets must not be edited — refusing to run")


def load_needle_set(file_name: str, name: str, silent_file: str | None = None) -> EvalSet:
    """A needle set; with `silent_file`, its unanswerable questions too (``EvalSet.silent``)."""
    data = json.loads((SETS_DIR / file_name).read_text(encoding="utf-8"))
    docs = set_documents(data, file_name)
    questions = [Question(q["id"], q["question"], needles=[normalise(n) for n in q["needles"]],
                          facts=[normalise(f) for f in q.get("facts", [])])
                 for q in data["questions"]]
    silent: list[Question] = []
    if silent_file is not None:
        beside = json.loads((SETS_DIR / silent_file).read_text(encoding="utf-8"))
        if [d.sha256 for d in set_documents(beside, silent_file)] != [d.sha256 for d in docs]:
            raise SystemExit(f"{silent_file} is not about the documents of {file_name}; refusing to run")
        silent = [Question(q["id"], q["question"], answerable=False) for q in beside["questions"]]
    return EvalSet(name, docs, questions, silent=silent)


def set_documents(data: dict[str, Any], file_name: str) -> list[Doc]:
    """A set file's documents (a relative path is under bench/sets/), each checked against its sha256."""
    docs = []
    for entry in data["documents"]:
        path = Path(entry["path"])
        if not path.is_absolute():
            path = SETS_DIR / path
        if not path.exists():
            raise SystemExit(f"{path} is missing: see bench/sets/README.md, 'Install the documents'")
        actual = sha256_file(path)
        if actual != entry["sha256"]:
            raise SystemExit(f"{path}: sha256 {actual} is not the one {file_name} was written for "
                             f"({entry['sha256']}); refusing to run")
        if entry.get("compression") == "gzip" or entry.get("pages"):
            path = set_corpus(path, entry)
            actual = sha256_file(path)
        docs.append(Doc(path, actual, "html" if entry["format"] == "html" else "file"))
    return docs


def set_corpus(path: Path, entry: dict[str, Any]) -> Path:
    """The part of a shipped document a set was written on, as a file to upload: a gzipped PDF
    unpacked (its sha256 checked against `uncompressed_sha256`) and cut to the `pages` [first, last]
    the set covers, so nothing outside them (an appendix answering a silent question) is stored."""
    import gzip

    data = gzip.decompress(path.read_bytes()) if entry.get("compression") == "gzip" else path.read_bytes()
    expected = entry.get("uncompressed_sha256")
    if expected and hashlib.sha256(data).hexdigest() != expected:
        raise SystemExit(f"{path}: the unpacked PDF is not the one the set was written for; refusing to run")
    name = path.name.removesuffix(".gz")
    folder = CACHE_DIR / "corpora" / hashlib.sha256(data).hexdigest()[:16]
    target = folder / name
    if target.exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    if not entry.get("pages"):
        target.write_bytes(data)
        return target
    import io

    from pypdf import PdfReader, PdfWriter

    first, last = entry["pages"]
    reader, writer = PdfReader(io.BytesIO(data)), PdfWriter()
    for page in reader.pages[first - 1:last]:
        writer.add_page(page)
    if reader.metadata:  # its title names the document in the sources, as the whole PDF's would
        writer.add_metadata(dict(reader.metadata))
    partial = target.with_suffix(".part")
    with partial.open("wb") as handle:
        writer.write(handle)
    partial.rename(target)
    return target


def load_debian_set(with_distractors: bool = False) -> EvalSet:
    """bench/datasets.py's set as text files (one per source file) and answer spans in them."""
    from bench.datasets import load_ru_eval

    data = load_ru_eval()
    groups: dict[str, list[int]] = defaultdict(list)
    for index, passage in enumerate(data.passages):
        source = passage.source.split("#", 1)[0]
        if with_distractors or not source.startswith("manpages-ru"):
            groups[source].append(index)
    folder = CACHE_DIR / "debian-docs"
    folder.mkdir(parents=True, exist_ok=True)
    docs, texts = [], {}
    where: dict[str, tuple[str, int, int]] = {}  # passage id → (file name, start, end) in normalised text
    for source, indexes in groups.items():
        name = re.sub(r"[^\w.-]+", "_", source) + ".txt"
        path = folder / name
        body = "\n\n".join(data.passages[i].text for i in indexes) + "\n"
        if not path.exists() or path.read_text(encoding="utf-8") != body:
            path.write_text(body, encoding="utf-8")
        pieces, cursor = [], 0
        for i in indexes:
            piece = normalise(data.passages[i].text)
            where[data.passages[i].id] = (name, cursor, cursor + len(piece))
            pieces.append(piece)
            cursor += len(piece) + 1
        texts[name] = " ".join(pieces)
        docs.append(Doc(path, sha256_file(path), "file"))
    questions = []
    for query in data.queries:
        answer: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for pid in query.relevant_ids:
            if pid in where:  # without the distractors, an answer in a man page is not in the store
                name, start, end = where[pid]
                answer[name].append((start, end))
        questions.append(Question(query.id, query.text, answer=dict(answer)))
    return EvalSet("debian", docs, questions, texts)


def load_sets(names: Iterable[str], with_distractors: bool = False) -> list[EvalSet]:
    verify_frozen_sets()
    loaders: dict[str, Callable[[], EvalSet]] = {
        "texlive": lambda: load_needle_set("texlive_pdf_ru.json", "texlive"),
        "gimp": lambda: load_needle_set("gimp_html_ru.json", "gimp"),
        "debian": lambda: load_debian_set(with_distractors),
        "libreoffice": lambda: load_needle_set("libreoffice_html_ru.json", "libreoffice"),
        "writer": lambda: load_needle_set("libreoffice_writer_html_ru.json", "writer"),
        "metapost": lambda: load_needle_set("metapost_pdf_ru.json", "metapost", "metapost_pdf_silent_ru.json"),
        "doublecmd": lambda: load_needle_set("doublecmd_docx_ru.json", "doublecmd", "doublecmd_docx_silent_ru.json"),
        "texlive-dev": lambda: load_needle_set("texlive_pdf_ru.json", "texlive-dev", "texlive_pdf_silent_ru.json"),
        "gimp-dev": lambda: load_needle_set("gimp_html_ru.json", "gimp-dev", "gimp_html_silent_ru.json"),
        "installguide": lambda: load_needle_set("debian_install_pdf_ru.json", "installguide",
                                                "debian_install_pdf_silent_ru.json"),
        "omegat": lambda: load_needle_set("omegat_html_ru.json", "omegat", "omegat_html_silent_ru.json"),
        "flowblade": lambda: load_needle_set("flowblade_html_ru.json", "flowblade", "flowblade_html_silent_ru.json"),
        "aptitude": lambda: load_needle_set("aptitude_pdf_ru.json", "aptitude", "aptitude_pdf_silent_ru.json"),
        "mandb": lambda: load_needle_set("mandb_weasyprint_pdf_ru.json", "mandb", "mandb_weasyprint_pdf_silent_ru.json"),
        "pymorphy2": lambda: load_needle_set("pymorphy2_rst_ru.json", "pymorphy2", "pymorphy2_rst_silent_ru.json"),
        "aisleriot": lambda: load_needle_set("aisleriot_epub_ru.json", "aisleriot", "aisleriot_epub_silent_ru.json"),
        "gnomehelp": lambda: load_needle_set("gnome_help_odt_ru.json", "gnomehelp", "gnome_help_odt_silent_ru.json"),
        "mchelp": lambda: load_needle_set("mc_help_txt_ru.json", "mchelp", "mc_help_txt_silent_ru.json"),
        "skycultures": lambda: load_needle_set("stellarium_skycultures_fb2_ru.json", "skycultures",
                                               "stellarium_skycultures_fb2_silent_ru.json"),
        "evolution": lambda: load_needle_set("evolution_help_rtf_ru.json", "evolution",
                                             "evolution_help_rtf_silent_ru.json"),
        "evince": lambda: load_needle_set("evince_help_pptx_ru.json", "evince", "evince_help_pptx_silent_ru.json"),
        "terminal": lambda: load_needle_set("gnome_terminal_help_html_ru.json", "terminal",
                                            "gnome_terminal_help_html_silent_ru.json"),
        "seahorse": lambda: load_needle_set("seahorse_help_pdf_ru.json", "seahorse", "seahorse_help_pdf_silent_ru.json"),
        "kturtle": lambda: load_needle_set("kturtle_handbook_md_ru.json", "kturtle",
                                           "kturtle_handbook_md_silent_ru.json"),
        "kalarm": lambda: load_needle_set("kalarm_handbook_pdf_ru.json", "kalarm", "kalarm_handbook_pdf_silent_ru.json"),
        "marble": lambda: load_needle_set("marble_handbook_docx_ru.json", "marble",
                                          "marble_handbook_docx_silent_ru.json"),
        "maintguide": lambda: load_needle_set("maint_guide_odt_ru.json", "maintguide", "maint_guide_odt_silent_ru.json"),
        "kmplot": lambda: load_needle_set("kmplot_handbook_html_ru.json", "kmplot",
                                          "kmplot_handbook_html_silent_ru.json"),
        "emacs": lambda: load_needle_set("emacs_tutorial_txt_ru.json", "emacs", "emacs_tutorial_txt_silent_ru.json"),
        "sysmonitor": lambda: load_needle_set("system_monitor_help_pdf_ru.json", "sysmonitor",
                                              "system_monitor_help_pdf_silent_ru.json"),
        "rhythmbox": lambda: load_needle_set("rhythmbox_help_html_ru.json", "rhythmbox",
                                             "rhythmbox_help_html_silent_ru.json"),
        "kmail": lambda: load_needle_set("kmail_handbook_epub_ru.json", "kmail", "kmail_handbook_epub_silent_ru.json"),
        "gnote": lambda: load_needle_set("gnote_help_html_ru.json", "gnote", "gnote_help_html_silent_ru.json"),
        "gwenview": lambda: load_needle_set("gwenview_handbook_html_ru.json", "gwenview",
                                            "gwenview_handbook_html_silent_ru.json"),
        "dolphin": lambda: load_needle_set("dolphin_handbook_pdf_ru.json", "dolphin", "dolphin_handbook_pdf_silent_ru.json"),
        "konsole": lambda: load_needle_set("konsole_handbook_html_ru.json", "konsole",
                                           "konsole_handbook_html_silent_ru.json"),
        "akregator": lambda: load_needle_set("akregator_handbook_pdf_ru.json", "akregator",
                                             "akregator_handbook_pdf_silent_ru.json"),
        "kolourpaint": lambda: load_needle_set("kolourpaint_handbook_pdf_ru.json", "kolourpaint",
                                               "kolourpaint_handbook_pdf_silent_ru.json"),
        "okular": lambda: load_needle_set("okular_handbook_odt_ru.json", "okular", "okular_handbook_odt_silent_ru.json"),
        "kcalc": lambda: load_needle_set("kcalc_handbook_pdf_ru.json", "kcalc", "kcalc_handbook_pdf_silent_ru.json"),
        "kompare": lambda: load_needle_set("kompare_handbook_odt_ru.json", "kompare", "kompare_handbook_odt_silent_ru.json"),
        "kwordquiz": lambda: load_needle_set("kwordquiz_handbook_pdf_ru.json", "kwordquiz",
                                             "kwordquiz_handbook_pdf_silent_ru.json"),
        "kig": lambda: load_needle_set("kig_handbook_docx_ru.json", "kig", "kig_handbook_docx_silent_ru.json"),
        "kgpg": lambda: load_needle_set("kgpg_handbook_html_ru.json", "kgpg", "kgpg_handbook_html_silent_ru.json"),
        "juk": lambda: load_needle_set("juk_handbook_pdf_ru.json", "juk", "juk_handbook_pdf_silent_ru.json"),
        "kolf": lambda: load_needle_set("kolf_handbook_pdf_ru.json", "kolf", "kolf_handbook_pdf_silent_ru.json"),
        "step": lambda: load_needle_set("step_handbook_docx_ru.json", "step", "step_handbook_docx_silent_ru.json"),
        "spectacle": lambda: load_needle_set("spectacle_handbook_html_ru.json", "spectacle",
                                             "spectacle_handbook_html_silent_ru.json"),
        "kinfocenter": lambda: load_needle_set("kinfocenter_handbook_pdf_ru.json", "kinfocenter",
                                               "kinfocenter_handbook_pdf_silent_ru.json"),
        "krdc": lambda: load_needle_set("krdc_handbook_docx_ru.json", "krdc", "krdc_handbook_docx_silent_ru.json"),
        "kmouth": lambda: load_needle_set("kmouth_handbook_pdf_ru.json", "kmouth", "kmouth_handbook_pdf_silent_ru.json"),
        "kbruch": lambda: load_needle_set("kbruch_handbook_epub_ru.json", "kbruch",
                                          "kbruch_handbook_epub_silent_ru.json"),
        "kmines": lambda: load_needle_set("kmines_handbook_odt_ru.json", "kmines", "kmines_handbook_odt_silent_ru.json"),
        "ktouch": lambda: load_needle_set("ktouch_handbook_pdf_ru.json", "ktouch", "ktouch_handbook_pdf_silent_ru.json"),
        "skanlite": lambda: load_needle_set("skanlite_handbook_md_ru.json", "skanlite",
                                            "skanlite_handbook_md_silent_ru.json"),
        "fileroller": lambda: load_needle_set("file_roller_help_epub_ru.json", "fileroller",
                                              "file_roller_help_epub_silent_ru.json"),
        "brasero": lambda: load_needle_set("brasero_help_html_ru.json", "brasero", "brasero_help_html_silent_ru.json"),
        "boxes": lambda: load_needle_set("gnome_boxes_help_rtf_ru.json", "boxes", "gnome_boxes_help_rtf_silent_ru.json"),
        "totem": lambda: load_needle_set("totem_help_fb2_ru.json", "totem", "totem_help_fb2_silent_ru.json"),
        "ghex": lambda: load_needle_set("ghex_help_txt_ru.json", "ghex", "ghex_help_txt_silent_ru.json"),
        "knights": lambda: load_needle_set("knights_handbook_md_ru.json", "knights", "knights_handbook_md_silent_ru.json"),
        "rocs": lambda: load_needle_set("rocs_handbook_epub_ru.json", "rocs", "rocs_handbook_epub_silent_ru.json"),
        "kmenuedit": lambda: load_needle_set("kmenuedit_handbook_odt_ru.json", "kmenuedit",
                                             "kmenuedit_handbook_odt_silent_ru.json"),
        "kalzium": lambda: load_needle_set("kalzium_handbook_docx_ru.json", "kalzium",
                                           "kalzium_handbook_docx_silent_ru.json"),
        "zenity": lambda: load_needle_set("zenity_help_fb2_ru.json", "zenity", "zenity_help_fb2_silent_ru.json"),
        "epiphany": lambda: load_needle_set("epiphany_help_txt_ru.json", "epiphany",
                                            "epiphany_help_txt_silent_ru.json"),
        "kmix": lambda: load_needle_set("kmix_handbook_odt_ru.json", "kmix", "kmix_handbook_odt_silent_ru.json"),
        "dejadup": lambda: load_needle_set("deja_dup_help_docx_ru.json", "dejadup",
                                           "deja_dup_help_docx_silent_ru.json"),
        "umbrello": lambda: load_needle_set("umbrello_handbook_pdf_ru.json", "umbrello",
                                            "umbrello_handbook_pdf_silent_ru.json"),
        "cervisia": lambda: load_needle_set("cervisia_handbook_pdf_ru.json", "cervisia",
                                            "cervisia_handbook_pdf_silent_ru.json"),
        "soundjuicer": lambda: load_needle_set("sound_juicer_help_rtf_ru.json", "soundjuicer",
                                               "sound_juicer_help_rtf_silent_ru.json"),
        "kwave": lambda: load_needle_set("kwave_handbook_pdf_ru.json", "kwave", "kwave_handbook_pdf_silent_ru.json"),
        "gbrainy": lambda: load_needle_set("gbrainy_help_html_ru.json", "gbrainy", "gbrainy_help_html_silent_ru.json"),
        "skrooge": lambda: load_needle_set("skrooge_handbook_pdf_ru.json", "skrooge",
                                           "skrooge_handbook_pdf_silent_ru.json"),
        "cheese": lambda: load_needle_set("cheese_help_rtf_ru.json", "cheese", "cheese_help_rtf_silent_ru.json"),
        "konversation": lambda: load_needle_set("konversation_handbook_pdf_ru.json", "konversation",
                                                "konversation_handbook_pdf_silent_ru.json"),
        "gucharmap": lambda: load_needle_set("gucharmap_help_txt_ru.json", "gucharmap",
                                             "gucharmap_help_txt_silent_ru.json"),
        "tellico": lambda: load_needle_set("tellico_handbook_pdf_ru.json", "tellico",
                                           "tellico_handbook_pdf_silent_ru.json"),
        "kgeography": lambda: load_needle_set("kgeography_handbook_html_ru.json", "kgeography",
                                              "kgeography_handbook_html_silent_ru.json"),
        "glade": lambda: load_needle_set("glade_help_html_ru.json", "glade", "glade_help_html_silent_ru.json"),
        "kiten": lambda: load_needle_set("kiten_handbook_txt_ru.json", "kiten", "kiten_handbook_txt_silent_ru.json"),
        "inkscape": lambda: load_needle_set("inkscape_tutorial_epub_ru.json", "inkscape",
                                            "inkscape_tutorial_epub_silent_ru.json"),
        "mkvextract": lambda: load_needle_set("mkvextract_man_md_ru.json", "mkvextract",
                                              "mkvextract_man_md_silent_ru.json"),
        "nmap": lambda: load_needle_set("nmap_man_odt_ru.json", "nmap", "nmap_man_odt_silent_ru.json"),
        "xxkb": lambda: load_needle_set("xxkb_readme_docx_ru.json", "xxkb", "xxkb_readme_docx_silent_ru.json"),
        "filelight": lambda: load_needle_set("filelight_handbook_pptx_ru.json", "filelight",
                                             "filelight_handbook_pptx_silent_ru.json"),
        "ksystemlog": lambda: load_needle_set("ksystemlog_handbook_rtf_ru.json", "ksystemlog",
                                              "ksystemlog_handbook_rtf_silent_ru.json"),
        "kget": lambda: load_needle_set("kget_handbook_txt_ru.json", "kget", "kget_handbook_txt_silent_ru.json"),
        "minuet": lambda: load_needle_set("minuet_handbook_html_ru.json", "minuet",
                                          "minuet_handbook_html_silent_ru.json"),
    }
    return [loaders[name]() for name in names]


# --------------------------------------------------------------------------- relevance


@dataclass
class StoredChunk:
    id: int
    doc_name: str
    text: str
    normalised: str
    span: tuple[int, int] | None = None  # debian: where it lies in its document's normalised text


def locate(chunk: StoredChunk, texts: dict[str, str]) -> None:
    text = texts.get(chunk.doc_name)
    if text is None:
        return
    start = text.find(chunk.normalised)
    if start >= 0:
        chunk.span = (start, start + len(chunk.normalised))


def relevant(question: Question, chunk: StoredChunk) -> bool:
    if question.needles:
        return any(needle in chunk.normalised for needle in question.needles)
    spans = question.answer.get(chunk.doc_name)
    if not spans or chunk.span is None:
        return False
    start, end = chunk.span
    overlap = sum(max(0, min(end, b) - max(start, a)) for a, b in spans)
    answer_length = sum(b - a for a, b in spans)
    return overlap >= 0.5 * min(end - start, answer_length)


def stored_chunks(evalset: EvalSet, owner_id: int) -> list[StoredChunk]:
    """Every active chunk of `owner_id`, located in its document's normalised text (debian)."""
    from grove.store.db import transaction

    with transaction() as conn:
        rows = conn.execute(
            "select c.id, c.chunk_text, d.source_identifier from document_chunks c"
            " join documents d on d.id = c.document_id where c.owner_id = %s and c.is_active",
            (owner_id,)).fetchall()
    chunks = [StoredChunk(r["id"], Path(r["source_identifier"]).name, r["chunk_text"],
                          normalise(r["chunk_text"])) for r in rows]
    for chunk in chunks:
        locate(chunk, evalset.texts)
    return chunks


class Judge:
    """Whether a chunk's text, from a given document, holds a question's answer."""

    def __init__(self, evalset: EvalSet) -> None:
        self.evalset = evalset

    def holds(self, question: Question, text: str, document: str) -> bool:
        chunk = StoredChunk(0, Path(document).name, text, normalise(text))
        if not question.needles:
            locate(chunk, self.evalset.texts)
        return relevant(question, chunk)


# --------------------------------------------------------------------------- ingestion


def code_fingerprint() -> str:
    digest = hashlib.sha256()
    for pattern in INGESTION_CODE:
        for path in sorted(PROJECT_ROOT.glob(pattern)):
            digest.update(path.relative_to(PROJECT_ROOT).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_key(doc: Doc, via: str) -> str:
    from grove.core.settings import get_settings

    settings = get_settings()
    values = {name: str(getattr(settings, name)) for name in INGESTION_SETTINGS}
    payload = json.dumps([doc.sha256, doc.path.name, via, values, code_fingerprint()], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def _columns(conn: Any, table: str, skip: set[str]) -> list[str]:
    rows = conn.execute(
        "select column_name from information_schema.columns"
        " where table_schema = 'public' and table_name = %s and is_generated = 'NEVER'"
        " and is_identity = 'NO' order by ordinal_position", (table,)).fetchall()
    return [r["column_name"] for r in rows if r["column_name"] not in skip]


def dump_document(document_id: int) -> dict[str, Any]:
    """The rows the production path wrote for one document (not ids, not generated columns)."""
    from grove.store.db import transaction

    with transaction() as conn:
        doc_columns = _columns(conn, "documents", {"created_at"})
        chunk_columns = _columns(conn, "document_chunks", {"document_id", "created_at"})
        document = conn.execute(f"select {', '.join(doc_columns)} from documents where id = %s",
                                (document_id,)).fetchone()
        chunks = conn.execute(f"select {', '.join(chunk_columns)} from document_chunks"
                              " where document_id = %s order by position", (document_id,)).fetchall()
    return {"document": dict(document), "chunks": [dict(c) for c in chunks]}


def load_document(dump: dict[str, Any], owner_id: int) -> None:
    """Insert cached rows for `owner_id` (Postgres computes the generated columns as on insert)."""
    from psycopg.types.json import Jsonb

    from grove.store.db import transaction

    with transaction() as conn:
        document = {**dump["document"], "owner_id": owner_id}
        keys = list(document)
        document_id = conn.execute(
            f"insert into documents ({', '.join(keys)}) values ({', '.join(['%s'] * len(keys))}) returning id",
            [Jsonb(v) if isinstance(v, dict) else v for v in document.values()]).fetchone()["id"]
        if not dump["chunks"]:
            return
        keys = ["document_id", *dump["chunks"][0].keys()]
        with conn.cursor().copy(f"copy document_chunks ({', '.join(keys)}) from stdin") as copy:
            for chunk in dump["chunks"]:
                row = {**chunk, "owner_id": owner_id}
                copy.write_row([document_id, *(_copy_value(v) for v in row.values())])


def _copy_value(value: Any) -> Any:
    from nodes.store.document_store import vector_text

    if hasattr(value, "shape"):  # a pgvector column read back as numpy
        return vector_text(value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return value


class LoopbackSite:
    """A folder served on 127.0.0.1 (the link path refuses loopback unless the setting allows it)."""

    def __init__(self, folder: Path) -> None:
        handler = functools.partial(_QuietHandler, directory=str(folder))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/{name}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # stdlib signature
        pass


def html_files_parse() -> bool:
    """Whether the file parsers accept an .html file (another change may add an HTML parser)."""
    from grove.core.ingest_types import IngestError
    from grove.core.settings import get_settings
    from nodes.ingestion.parse_files import parse_file

    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / "probe.html"
        probe.write_text("<html><head><title>t</title></head><body><p>Проверка разбора HTML.</p></body></html>",
                         encoding="utf-8")
        try:
            parse_file(str(probe), probe.name, "text/html", get_settings())
        except (IngestError, ValueError):
            return False
    return True


def new_stats() -> dict[str, Any]:
    return {"cached": 0, "ingested": 0, "failed": [], "ingest_seconds": 0.0}


def ingest_set(evalset: EvalSet, owner_id: int, html_via: str, stats: dict[str, Any],
               batch_size: int = INGEST_BATCH) -> None:
    """Every document of the set for this owner: from the cache, or through the ingest flow.

    `html_via` is "file" or "link" (HTML pages served on a loopback site, which needs
    GROVE_ALLOW_LOOPBACK_URLS=true); `stats` (see new_stats) is added to.
    """
    from flows.ingest import ingest
    from grove.app.ingest_cli import item_for

    via = {"html": html_via, "file": "file"}
    missing: list[tuple[Doc, str]] = []
    for doc in evalset.docs:
        key = cache_key(doc, via[doc.kind])
        path = CACHE_DIR / "stores" / f"{key}.pkl"
        if path.exists():
            load_document(pickle.loads(path.read_bytes()), owner_id)
            stats["cached"] += 1
        else:
            missing.append((doc, key))
    site = None
    try:
        for start in range(0, len(missing), batch_size):
            batch = missing[start:start + batch_size]
            arguments = {}
            for doc, key in batch:
                if doc.kind == "html" and html_via == "link":
                    if site is None:
                        site = LoopbackSite(doc.path.parent)
                    arguments[site.url(doc.path.name)] = (doc, key)
                else:
                    arguments[str(doc.path)] = (doc, key)
            started = time.perf_counter()
            outcomes = ingest([item_for(a) for a in arguments], owner_id)
            stats["ingest_seconds"] += time.perf_counter() - started
            for argument, outcome in zip(arguments, outcomes):
                doc, key = arguments[argument]
                if outcome.status != "indexed" or outcome.document_id is None:
                    stats["failed"].append(f"{doc.path.name}: {outcome.status} {outcome.reason or ''}")
                    continue
                target = CACHE_DIR / "stores" / f"{key}.pkl"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(pickle.dumps(dump_document(outcome.document_id)))
                stats["ingested"] += 1
            print(f"  {evalset.name}: ingested {min(start + batch_size, len(missing))}/{len(missing)} "
                  f"documents ({stats['ingest_seconds']:.0f} s)", flush=True)
    finally:
        if site is not None:
            site.close()


@contextmanager
def prefect_server() -> Iterator[None]:
    """A temporary Prefect server for the ingest flow runs (as `grove ingest` would use)."""
    from grove.infra.prefect_server import PrefectServer
    from tests.support.ports import free_port

    work = Path(tempfile.mkdtemp(prefix="grove-bench-prefect-"))
    server = PrefectServer(home=work / "prefect", port=free_port())
    server.start(timeout=180)
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        yield
    finally:
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=10)
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


@contextmanager
def stores(names: Sequence[str], with_distractors: bool = False) -> Iterator[list[EvalSet]]:
    """A fresh embedded Postgres holding every named set's store (owner = EvalSet.owner)."""
    from bench.support import temporary_store
    from grove.core.settings import reset_settings

    sets = load_sets(names, with_distractors)
    os.environ["GROVE_ALLOW_LOOPBACK_URLS"] = "true"
    reset_settings()
    html_via = "file" if html_files_parse() else "link"
    with temporary_store():
        for evalset in sets:
            stats = new_stats()
            ingest_set(evalset, evalset.owner, html_via, stats)
            print(f"{evalset.name}: {len(evalset.questions)} questions, {len(evalset.docs)} documents "
                  f"({stats['cached']} cached, {stats['ingested']} ingested in {stats['ingest_seconds']:.0f} s, "
                  f"HTML via {html_via})" + (f"; failed: {stats['failed']}" if stats["failed"] else ""),
                  flush=True)
        yield sets
