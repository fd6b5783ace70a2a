-- Pinned definitions of upstream MCP servers' tools (issue 26): the first
-- definition teamgate saw of each tool, and a changed one awaiting an
-- operator's `teamgate upstreams approve`.
create table upstream_pins (
    upstream text not null,              -- the [[upstreams]] entry's name
    tool text not null,                  -- the upstream's own tool name (before the prefix)
    hash text not null,                  -- sha256 of the pinned definition's canonical JSON, hex
    definition text not null,            -- that canonical JSON (name, title, description, schemas, annotations)
    pinned_ms bigint not null,           -- first seen, or approved
    pending_hash text,                   -- a changed definition seen since; null: none
    pending_definition text,
    changed_ms bigint,
    primary key (upstream, tool)
);
