-- Usage rolled up as the audit is written (issue 64 part 2): per minute, hour
-- and day bucket (grain_ms wide, starting at bucket_ms), per member, tool,
-- upstream, and a member's tool (dimension 'member_tool': key the member, sub
-- the tool; sub is empty otherwise), the calls, the errors among them and a
-- latency histogram (h0..h15: at most 1, 2, 5, 10, 20, 50, 100, 200, 500 ms,
-- 1, 2, 5, 10, 20, 60 s, and over 60 s). Written in the audit batch's own
-- transaction (store/usage_rows.rs); old buckets are purged per grain. On
-- PostgreSQL, audit batches written at once each add to a shard of their own
-- (shard 0 to 3), so none waits for another's commit on a shared row; the
-- purge folds the shards of buckets past into shard 0. SQLite has shard 0 only.
create table usage_rollups (
    grain_ms bigint not null,
    bucket_ms bigint not null,
    dimension text not null,
    key text not null,
    sub text not null,
    shard bigint not null,
    calls bigint not null,
    errors bigint not null,
    h0 bigint not null,
    h1 bigint not null,
    h2 bigint not null,
    h3 bigint not null,
    h4 bigint not null,
    h5 bigint not null,
    h6 bigint not null,
    h7 bigint not null,
    h8 bigint not null,
    h9 bigint not null,
    h10 bigint not null,
    h11 bigint not null,
    h12 bigint not null,
    h13 bigint not null,
    h14 bigint not null,
    h15 bigint not null,
    primary key (grain_ms, bucket_ms, dimension, key, sub, shard)
) without rowid;
