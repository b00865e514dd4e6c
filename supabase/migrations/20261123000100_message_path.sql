-- The message path: nothing acknowledged to Telegram is lost, each user's updates run in order,
-- replies are delivered once, long work runs in the background.

-- Every update, stored before Telegram may consider it delivered (polling: before the next
-- getUpdates; webhook: before HTTP 200). Keyed by Telegram's update_id, so a redelivery is a
-- no-op. Unfinished rows are resumed on start, in per-user order.
create table if not exists inbox (
    update_id   bigint primary key,
    user_id     bigint,
    chat_id     bigint,
    payload     jsonb not null,
    status      text not null default 'pending'
                check (status in ('pending', 'running', 'done', 'failed', 'skipped')),
    attempts    integer not null default 0,
    received_at timestamptz not null default now(),
    started_at  timestamptz,
    finished_at timestamptz,
    error       text,
    trace       jsonb
);
create index if not exists inbox_unfinished_idx on inbox (user_id, update_id)
    where status in ('pending', 'running');
create index if not exists inbox_finished_at_idx on inbox (finished_at);

-- Replies, written in the same transaction as the turn that made them and sent after it
-- commits. A crash after the commit re-sends nothing that is marked sent and never re-runs
-- the turn. `edit_of` points at an earlier reply whose message is edited instead of sending
-- a new one (an upload's progress message turning into its confirmation).
create table if not exists outbox (
    id          bigint generated always as identity primary key,
    update_id   bigint,
    job_id      bigint,
    chat_id     bigint not null,
    payload     jsonb not null,
    edit_of     bigint references outbox (id) on delete set null,
    pieces_sent integer not null default 0,
    message_ids bigint[] not null default '{}',
    created_at  timestamptz not null default now(),
    sent_at     timestamptz,
    error       text
);
create index if not exists outbox_unsent_idx on outbox (id) where sent_at is null;
create index if not exists outbox_update_idx on outbox (update_id);
create index if not exists outbox_created_at_idx on outbox (created_at);

-- Background work (ingestion): claimed with a lease, so a worker that dies leaves its job to
-- the next one once the lease runs out.
create table if not exists jobs (
    id          bigint generated always as identity primary key,
    kind        text not null,
    user_id     bigint not null,
    chat_id     bigint not null,
    update_id   bigint,
    payload     jsonb not null,
    status      text not null default 'queued'
                check (status in ('queued', 'running', 'done', 'failed')),
    attempts    integer not null default 0,
    lease_until timestamptz,
    worker      text,
    ack_id      bigint references outbox (id) on delete set null,
    result      jsonb,
    error       text,
    created_at  timestamptz not null default now(),
    started_at  timestamptz,
    finished_at timestamptz
);
create index if not exists jobs_open_idx on jobs (id) where status in ('queued', 'running');

-- One-time confirmations (/clean_base): a button is valid once, for the user and chat that
-- asked, for a limited time.
create table if not exists confirmations (
    token      text primary key,
    action     text not null,
    user_id    bigint not null,
    chat_id    bigint not null,
    created_at timestamptz not null default now(),
    used_at    timestamptz
);

-- The job that stored a document: a job resumed after a crash recognises its own work
-- ("indexed") instead of calling it a duplicate.
alter table documents add column if not exists job_id bigint;
