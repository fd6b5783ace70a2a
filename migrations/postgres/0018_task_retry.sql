-- Retried tasks (issue 66 part 3): a task of a tool with `task_retry` keeps
-- the call it runs (arguments, caller, request _meta) so that, when its
-- replica dies, another replica claims it and runs it again, at most
-- `retries_left` more times. Other tasks keep neither (call stays null).
alter table tasks add column retries_left bigint not null default 0;
alter table tasks add column call text;
