-- Approval by a second person (issue 65 part 2): a parked call of a tool
-- with `approval`, the exact arguments it runs with, and its decision. Any
-- replica reads it, so a decision made on one replica reaches a call parked
-- on another, and a restart loses neither the request nor the decision.
create table approvals (
    id text primary key,                 -- unguessable (128 random bits, hex)
    requester text not null,             -- the member who called; never their own approver
    tool text not null,
    arguments text not null,             -- JSON: exactly what runs when approved
    args_digest text not null,           -- the arguments' digest, to find a repeated call's request
    approver_group text not null,        -- whose members decide
    status text not null,                -- pending | approved | denied | expired | withdrawn | used
    decided_by text,
    reason text,
    created_ms bigint not null,
    expires_ms bigint not null,
    decided_ms bigint
);
create index approvals_open on approvals (status, approver_group, created_ms);
create index approvals_requester on approvals (requester, tool, args_digest);
