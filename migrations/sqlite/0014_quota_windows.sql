-- Quotas shared by replicas (issue 64): how many requests of one key (a caller,
-- a caller and tool, an address) the replicas together have taken in one
-- window of the rate limit, in blocks each replica then admits from locally.
create table quota_windows (
    key text not null,
    window_ms bigint not null,
    used bigint not null,
    primary key (key, window_ms)
);
