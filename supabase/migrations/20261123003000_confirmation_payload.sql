-- grove: a one-time button may carry what it confirms. A file sent in Чат mode is offered for
-- indexing with a button; the items to index wait in the confirmation's payload until the
-- user presses it (nodes/confirmations.py, flows/handle_update.py `index_offer`).
alter table confirmations add column if not exists payload jsonb;
