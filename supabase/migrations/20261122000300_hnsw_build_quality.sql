-- grove: both HNSW indexes rebuilt with ef_construction = 256 (was 64), m unchanged (16).
-- Measured on 100,000 real EmbeddingGemma vectors (bench/hnsw_recall.py): recall@10 against
-- exact search at the default hnsw.ef_search = 100 rose from 0.917 to 0.981, at the same
-- query time (≈ 4 ms). A better graph costs only when rows are added: loading and indexing 100k
-- rows took 85 s instead of 32 s, nothing next to embedding the chunks (≈ 300 ms each on 2 cores).
drop index if exists document_chunks_embedding_hnsw;
create index document_chunks_embedding_hnsw
    on document_chunks using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 256);

drop index if exists knowledge_base_embedding_hnsw;
create index knowledge_base_embedding_hnsw
    on knowledge_base using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 256);
