-- A background job's embedded batches, kept as they are computed, so a job stopped or killed
-- midway resumes from its last stored batch instead of from zero. Gone when the job ends.
create table if not exists embedding_checkpoints (
    job_id   bigint not null references jobs (id) on delete cascade,
    document text not null,
    position integer not null,
    vector   real[] not null,
    primary key (job_id, document, position)
);
