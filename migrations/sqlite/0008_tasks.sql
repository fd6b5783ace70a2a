-- Durable tasks (issue 31): a task-augmented tools/call lives here, so any
-- replica answers tasks/get, tasks/update and tasks/cancel for it, and a
-- task whose replica died is marked failed by another one.
create table tasks (
    id text primary key,                 -- unguessable (128 random bits, hex)
    owner text not null,                 -- the member who created it; nobody else sees it
    tool text not null,
    status text not null,                -- working | input_required | completed | failed | cancelled
    status_message text,
    progress text,                       -- the latest progress line, if any
    outcome text,                        -- JSON: the CallToolResult (completed) or JSON-RPC error (failed)
    input_requests text,                 -- JSON: outstanding inputRequests while input_required
    input_responses text,                -- JSON: answers received by tasks/update, not yet taken
    ttl_ms bigint not null,
    poll_ms bigint not null,
    created_ms bigint not null,
    updated_ms bigint not null,
    replica text not null,               -- the replica running it
    heartbeat_ms bigint not null,        -- that replica's last sign of life
    cancel_requested bigint not null default 0
);
create index tasks_owner on tasks (owner, created_ms);
create index tasks_live on tasks (status, heartbeat_ms);
