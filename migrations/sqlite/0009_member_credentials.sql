-- Per-member credential slots (issue 29): each member's own value of a declared
-- [[credentials.slots]] entry, sealed with AES-256-GCM under one of the
-- credentials.keys (named by key_id, so a rotated list still opens old rows).
-- The owner and slot are the cipher's associated data: a row copied to
-- another member or slot does not open.
create table member_credentials (
    owner text not null,                 -- the member (the caller's user name)
    slot text not null,                  -- the slot's name
    key_id text not null,                -- which key sealed it (a digest of the key, never the key)
    nonce text not null,                 -- the 96-bit nonce, base64
    ciphertext text not null,            -- the sealed value with its tag, base64
    updated_at bigint not null,          -- ms since the epoch
    primary key (owner, slot)
);
-- Which credential kind served a call (shared, member, fallback); never the value.
alter table audit add column credential text not null default '';
