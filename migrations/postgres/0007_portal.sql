-- The portal's browser sessions (issue 27). The cookie holds an opaque id; only its
-- sha256 is kept. Before sign-in a row holds the login's state, PKCE verifier and
-- nonce, so they are bound to the browser that started the login and used once.
create table portal_sessions (
    id_hash text primary key,            -- sha256 of the cookie value, hex
    member text not null,                -- "" until signed in
    groups text not null,                -- JSON array of the member's groups
    csrf text not null,                  -- the token every form of this session carries
    login_state text,                    -- null once the login finished (or never started)
    login_verifier text,
    login_nonce text,
    created_ms bigint not null,
    last_seen_ms bigint not null,
    expires_ms bigint not null           -- absolute expiry
);
create index portal_sessions_expires on portal_sessions (expires_ms);

-- Where an audited action came from (the client's address), as the edge saw it.
alter table audit add column address text not null default '';
