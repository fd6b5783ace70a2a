-- Legacy (2025-era) sessions, so they survive restarts and move between replicas.
create table sessions (
    id text primary key,                 -- the Mcp-Session-Id, random
    owner text not null,                 -- the caller who initialized it
    protocol_version text not null,      -- negotiated in initialize
    client_name text not null,           -- clientInfo.name, for operators
    client_version text not null,
    init_params text not null,           -- the initialize params (JSON), replayed on restore
    server_capabilities text not null,   -- what the server advertised (JSON)
    state text not null default '{}',    -- per-session settings (log level, subscriptions), JSON
    created_ms bigint not null,
    last_seen_ms bigint not null,
    expires_ms bigint not null
);
create index sessions_owner on sessions (owner);
create index sessions_expires on sessions (expires_ms);

-- SSE events of legacy streams, for Last-Event-ID resumption on any replica.
create table stream_events (
    id text primary key,                 -- the SSE event id sent to the client
    stream_id text not null,
    replica text not null,               -- the instance that wrote it
    position bigint not null,            -- order within the writing replica
    payload text not null,               -- the event (JSON)
    created_ms bigint not null
);
create index stream_events_stream on stream_events (stream_id, position);
create index stream_events_created on stream_events (created_ms);

-- Small server-wide values, e.g. a generated requestState key on SQLite.
create table settings (
    key text primary key,
    value text not null,
    created_ms bigint not null
);
