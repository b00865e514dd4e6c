-- grove: an admin editing a moderation item. The edited answer arrives as the
-- admin's next message, possibly in another process, so who is editing what is
-- kept here rather than in memory.
alter table moderation_queue add column if not exists editing_by bigint;
create index if not exists moderation_queue_editing_idx on moderation_queue (editing_by)
    where status = 'pending' and editing_by is not null;
