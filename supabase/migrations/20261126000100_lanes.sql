-- Scale-out on Prefect (GROVE_DISPATCH=prefect): a user's work of one kind (turns, indexing
-- jobs) is a lane, run by one Prefect background task at a time on any worker, in order.
-- The row says a lane is open and who holds it; the work itself stays in `inbox` and `jobs`.
-- A worker that dies stops renewing its lease, and any sweeper hands the lane to Prefect again.
create table if not exists lanes (
    user_id     bigint not null,
    kind        text not null,
    task_run_id uuid,
    worker      text,
    lease_until timestamptz,
    opened_at   timestamptz not null default now(),
    primary key (user_id, kind)
);

-- What the receiver made of an update (it knows the bot's own name, which group messages are
-- matched against), so a worker on another machine runs the turn from the row alone.
alter table inbox add column if not exists incoming jsonb;
