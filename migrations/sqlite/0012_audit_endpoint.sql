-- The endpoint a call came through (issue 60): a toolset's name for
-- <mcp.path>/<name>, empty for the main endpoint.
alter table audit add column endpoint text not null default '';
