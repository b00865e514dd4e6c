-- Where a chunk sits in its document, as the reader sees it: the page number the
-- document prints (a PDF's /PageLabels, e.g. 'vii'; `page` stays the physical
-- page) and the heading path of its section ('Установка → Windows').
-- Both nullable: older chunks and unpaged or unstructured sources have none.
alter table document_chunks add column if not exists page_label text;
alter table document_chunks add column if not exists section text;
