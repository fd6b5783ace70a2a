-- Upstream tasks (issue 66 part 2): a task an upstream server made for a
-- member's call. The row maps teamgate's id to the upstream's; no replica
-- runs it (it is never swept or claimed): tasks/get on any replica asks the
-- upstream over the member's connection, and stores the end it sees.
alter table tasks add column upstream text;        -- the [[upstreams]] name; null: teamgate's own task
alter table tasks add column upstream_task text;   -- the upstream's taskId, never shown to the member
