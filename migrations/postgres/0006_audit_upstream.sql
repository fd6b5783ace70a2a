-- The upstream MCP server that served a call (its [[upstreams]] name), empty for
-- teamgate's own capabilities: the audit trail names both the upstream and the tool.
alter table audit add column upstream text not null default '';
