-- grove: full-text search over document chunks, for the hybrid first stage of retrieval
-- (nodes/retrieve.py, GROVE_RETRIEVAL_FIRST_STAGE=hybrid).
--
-- Two tsvectors per chunk, both over the document title and the chunk text:
--   fts_russian  the `russian` configuration: Russian words stemmed by Snowball ("малину" and
--                "малины" meet), Russian and English stop words dropped, Latin words stemmed
--                by the English Snowball stemmer;
--   fts_simple   the `simple` configuration: every token lower-cased as written, no stop words,
--                no stemming. It keeps what stemming and stop lists blur: commands, package
--                names, options, numbers, single-letter hotkeys ("A" is an English stop word).
-- Both are STORED generated columns (Postgres 18 makes generated columns virtual unless told,
-- and a virtual column cannot be indexed): written by Postgres itself on every insert, so the
-- ingestion code does not change and no row can be stored without them. The GIN indexes serve
-- the `@@` match of the text branch; ts_rank_cd reads the stored vectors (an expression index
-- alone would recompute to_tsvector for every matched row at query time).
--
-- Cost on an existing table: adding a stored generated column rewrites the whole table and
-- rebuilds every index on it, the HNSW index included, under an ACCESS EXCLUSIVE lock (no reads
-- or writes of document_chunks meanwhile). Measured on the 100,000-row bench table of
-- bench/chat_latency.py (≈ 600-character chunks of Russian text, 2 shared CPU cores): see
-- bench/README.md, "Hybrid first stage" (the rewrite with the HNSW rebuild takes minutes, not
-- hours). The alternative — a plain column filled by a trigger and a batched UPDATE of the old
-- rows — is slower here, not faster: every updated row is a new tuple version that is inserted
-- into the HNSW graph one by one (≈ 1 ms a row), and the table doubles until vacuumed.
-- Schedule the migration for a quiet moment on a large store; on a new store it costs nothing.

alter table document_chunks
    add column if not exists fts_russian tsvector
        generated always as (to_tsvector('russian'::regconfig,
                                         coalesce(title, '') || ' ' || chunk_text)) stored,
    add column if not exists fts_simple tsvector
        generated always as (to_tsvector('simple'::regconfig,
                                         coalesce(title, '') || ' ' || chunk_text)) stored;

create index if not exists document_chunks_fts_russian_gin on document_chunks using gin (fts_russian);
create index if not exists document_chunks_fts_simple_gin on document_chunks using gin (fts_simple);
