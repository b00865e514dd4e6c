-- grove: the whole store in one schema.
-- Plain SQL in the Supabase CLI layout; every statement is idempotent so a
-- re-run (by `grove`, `supabase db push` or psql) changes nothing.
-- Embedding columns are vector(768): EmbeddingGemma-300M, the default model.
-- The service checks this width against its settings at start.

create extension if not exists vector;
create extension if not exists pg_trgm;

-- Mode switch (seed 001 §4.1): one row per user.
create table if not exists user_state (
    user_id      bigint primary key,
    chat_id      bigint,
    current_mode text check (current_mode in ('chat', 'documents')),
    session_id   text not null default gen_random_uuid()::text,
    updated_at   timestamptz not null default now()
);

-- Conversation topics (seed 000 "Управление контекстом").
create table if not exists topics (
    id            bigint generated always as identity primary key,
    user_id       bigint not null,
    session_id    text not null,
    status        text not null default 'open' check (status in ('open', 'closed')),
    category      text,
    culture       text,
    message_count integer not null default 0,
    created_at    timestamptz not null default now(),
    updated_at    timestamptz not null default now()
);
create index if not exists topics_user_open_idx on topics (user_id, status, updated_at desc);

-- Consultation state machine (seed 000): kept here, never in process memory.
create table if not exists consultation_state (
    user_id    bigint primary key,
    state      text check (state in ('waiting_variety_clarification', 'waiting_clarification_answer')),
    context    jsonb not null default '{}'::jsonb,
    turns      integer not null default 0,
    updated_at timestamptz not null default now()
);

-- Chat history (seed 001 §4.2); trimmed by insert_and_trim_pairs.
create table if not exists chat_messages (
    id         bigint generated always as identity primary key,
    user_id    bigint not null,
    session_id text not null,
    topic_id   bigint references topics (id) on delete set null,
    role       text not null check (role in ('user', 'assistant')),
    content    text not null,
    answered   boolean not null default true,
    created_at timestamptz not null default clock_timestamp()
);
create index if not exists chat_messages_user_idx on chat_messages (user_id, id desc);

-- Append one Q/A pair and keep only the user's newest p_keep messages.
-- A per-user advisory lock serialises concurrent writers of the same user, so
-- the trim always sees every row inserted before it and the count stays exact.
create or replace function insert_and_trim_pairs(
    p_user_id    bigint,
    p_session_id text,
    p_question   text,
    p_answer     text,
    p_keep       integer default 30,
    p_topic_id   bigint default null
) returns void
language plpgsql
as $$
begin
    perform pg_advisory_xact_lock(hashtextextended('grove.chat_messages:' || p_user_id::text, 0));
    insert into chat_messages (user_id, session_id, topic_id, role, content)
    values (p_user_id, p_session_id, p_topic_id, 'user', p_question),
           (p_user_id, p_session_id, p_topic_id, 'assistant', p_answer);
    delete from chat_messages
     where user_id = p_user_id
       and id < (select min(id) from (select id from chat_messages
                                       where user_id = p_user_id
                                       order by id desc limit p_keep) newest);
end;
$$;

-- Ingested documents. owner_id 0 is the shared domain library (consultation
-- tier 2); every other owner is a Telegram user id and sees only their rows.
create table if not exists documents (
    id                bigint generated always as identity primary key,
    owner_id          bigint not null,
    source_type       text not null,
    source_identifier text not null,
    title             text,
    author            text,
    published_at      text,
    subcategory       text,
    content_hash      text not null,
    char_count        integer not null default 0,
    chunk_count       integer not null default 0,
    duration_seconds  double precision,
    meta              jsonb not null default '{}'::jsonb,
    is_active         boolean not null default true,
    created_at        timestamptz not null default now()
);
create unique index if not exists documents_owner_hash_uniq
    on documents (owner_id, content_hash) where is_active;
create index if not exists documents_owner_idx on documents (owner_id);

create table if not exists document_chunks (
    id                bigint generated always as identity primary key,
    document_id       bigint not null references documents (id) on delete cascade,
    owner_id          bigint not null,
    source_type       text not null,
    source_identifier text not null,
    title             text,
    subcategory       text,
    page              integer,
    ts_start          double precision,
    ts_end            double precision,
    position          integer not null,
    chunk_text        text not null,
    content_hash      text not null,
    embedding         vector(768) not null,
    is_active         boolean not null default true,
    created_at        timestamptz not null default now()
);
create index if not exists document_chunks_embedding_hnsw
    on document_chunks using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 64);
create index if not exists document_chunks_owner_idx on document_chunks (owner_id) where is_active;
create index if not exists document_chunks_subcategory_idx on document_chunks (subcategory) where is_active;
create index if not exists document_chunks_document_idx on document_chunks (document_id);

-- Approved Q&A pairs (seed 002 tier 1), fed by the moderation queue.
create table if not exists knowledge_base (
    id                   bigint generated always as identity primary key,
    category             text not null,
    subcategory          text,
    question             text not null,
    answer               text not null,
    embedding            vector(768) not null,
    moderation_id        bigint,
    approved_by          bigint,
    is_active            boolean not null default true,
    created_at           timestamptz not null default now()
);
create index if not exists knowledge_base_embedding_hnsw
    on knowledge_base using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 64);
create index if not exists knowledge_base_category_idx on knowledge_base (category, subcategory) where is_active;

create table if not exists moderation_queue (
    id                bigint generated always as identity primary key,
    user_id           bigint not null,
    topic_id          bigint references topics (id) on delete set null,
    question          text not null,
    answer            text not null,
    culture           text,
    category_guess    text,
    status            text not null default 'pending'
                      check (status in ('pending', 'approved', 'rejected')),
    edited_answer     text,
    reviewer_id       bigint,
    reviewed_at       timestamptz,
    knowledge_base_id bigint references knowledge_base (id) on delete set null,
    created_at        timestamptz not null default now()
);
create index if not exists moderation_queue_pending_idx on moderation_queue (created_at) where status = 'pending';

-- Per-turn dialogue metrics (seed 003): template, signals, guards.
create table if not exists dialogue_turns (
    id         bigint generated always as identity primary key,
    user_id    bigint not null,
    flow       text not null,
    template   text not null,
    signals    jsonb not null default '[]'::jsonb,
    guards     jsonb not null default '[]'::jsonb,
    meta       jsonb not null default '{}'::jsonb,
    created_at timestamptz not null default now()
);
create index if not exists dialogue_turns_user_idx on dialogue_turns (user_id, created_at desc);
