-- Personal access tokens. Only a hash of the secret is kept.
create table tokens (
    id text primary key,                 -- public part of the token (tg_<id>_<secret>)
    user_name text not null,             -- the member it acts for
    label text not null,                 -- what it is for, e.g. "laptop"
    scopes text not null,                -- JSON array of granted scopes
    secret_hash text not null,           -- sha256 of the secret part, hex
    created_ms bigint not null,
    expires_ms bigint,                   -- null: never expires
    last_used_ms bigint,
    revoked_ms bigint                    -- null: active
);
create index tokens_user on tokens (user_name);

-- Append-only audit trail: one row per tools/call, resources/read, prompts/get
-- and per refused authentication or authorization.
create table audit (
    id text primary key,
    at_ms bigint not null,
    user_name text not null,             -- "" when unauthenticated
    token_id text not null,              -- personal token id, or ""
    issuer text not null,                -- JWT issuer, or ""
    subject text not null,               -- JWT subject, or ""
    session_id text not null,            -- legacy session, or ""
    protocol_version text not null,
    method text not null,
    target text not null,                -- tool, prompt or resource
    args_digest text not null,           -- sha256 of the canonical arguments, never the arguments
    outcome text not null,               -- ok, tool_error, error, denied, unauthenticated
    latency_ms bigint not null,
    trace_id text not null
);
create index audit_at on audit (at_ms);
create index audit_user on audit (user_name, at_ms);
