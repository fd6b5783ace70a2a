//! `task_retry` (issue 66 part 3): a task of a tool that may run twice,
//! whose replica is killed mid-run (SIGKILL, two real `teamgate serve`
//! processes on one PostgreSQL database), is claimed by the other replica
//! and run again with the stored arguments and caller, audited as
//! `tasks/retry` and `tasks/end`; and the configuration rules.

use std::{path::Path, time::Duration};

use serde_json::{Value, json};
use teamgate::store::AuditRecord;

use crate::{
    binary::{Served, serve},
    databases::TestDb,
    helpers::{audit_until, test_config},
};

const MODERN: &str = "2026-07-28";

fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// A 2026-07-28 request declaring the tasks extension; the JSON-RPC reply.
async fn call(served: &Served, token: &str, method: &str, params: Value) -> Value {
    call_at(&served.url, token, method, params).await
}

/// `call` to the MCP endpoint at `url`.
pub(crate) async fn call_at(url: &str, token: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let name = params.get("name").or_else(|| params.get("taskId"));
    let name = name.and_then(Value::as_str).unwrap_or_default().to_owned();
    let reply = teamgate::outbound::client()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", MODERN)
        .header("Mcp-Method", method)
        .header("Mcp-Name", name)
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    let text = reply.text().await.unwrap();
    // A JSON body, or the last `data:` line of an SSE one.
    let json = (text.lines().rev())
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(&text);
    serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The task once it has settled, polled on `served` (bounded: 40 s).
async fn settled(served: &Served, token: &str, id: &str) -> Value {
    for _ in 0..400 {
        let task = call(served, token, "tasks/get", json!({"taskId": id})).await;
        let status = task["result"]["status"].as_str().unwrap_or_default();
        if ["completed", "failed", "cancelled"].contains(&status) {
            return task["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task {id} did not settle")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retried_task_runs_again_on_the_other_replica_when_its_replica_is_killed() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    // Each run notes its argument and who it runs for; the first hangs,
    // as a migration would when its replica dies under it.
    let migrate = script(
        dir.path(),
        "migrate.sh",
        &format!(
            "echo \"$1 $2\" >> {runs}\nn=$(wc -l < {runs})\n\
             if [ \"$n\" -eq 1 ]; then exec sleep 30; fi\necho \"migrated $1 for $2 on run $n\"",
            runs = runs.display()
        ),
    );
    let config = dir.path().join("teamgate.toml");
    std::fs::write(
        &config,
        format!(
            "[reload]\nwatch = false\n\
             [mcp]\nrequest_state_keys = [\"retry-test-key-0123456789abcdef0123456789\"]\n\
             [audit]\ndurable = true\n\
             [tasks]\nheartbeat_timeout = \"2s\"\npoll_interval = \"200ms\"\n\
             [[tools.command]]\nname = \"migrate\"\ndescription = \"migrates a table; safe twice\"\n\
             program = \"{migrate}\"\nargs = [\"{{table}}\", \"{{who}}\"]\ntimeout = \"1m\"\n\
             task_retry = true\ntask_retry_max = 2\nfrom_caller = {{ who = \"user\" }}\n\
             input_schema = {{ type = \"object\", properties = {{ table = {{ type = \"string\" }}, \
             who = {{ type = \"string\" }} }}, required = [\"table\"] }}\n"
        ),
    )
    .unwrap();
    let env = [("TEAMGATE__STORE__URL", db.url.as_str())];
    let mut first = serve(&config, &env);
    let second = serve(&config, &env);
    let alice = first.token("alice", &[]);
    let bob = first.token("bob", &[]);

    let created = call(
        &first,
        &alice,
        "tools/call",
        json!({"name": "migrate",
        "arguments": {"table": "orders"}}),
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    // The first run has started on the first replica; then it is killed.
    for _ in 0..100 {
        if std::fs::read_to_string(&runs).is_ok_and(|r| r.lines().count() == 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    first.child.kill().unwrap();
    first.child.wait().unwrap();

    // The other replica claims it after the heartbeat timeout and runs it
    // again: same arguments, same caller (bound from the stored caller).
    let done = settled(&second, &alice, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("migrated orders for alice on run 2"),
        "{done}"
    );
    let noted = std::fs::read_to_string(&runs).unwrap();
    assert_eq!(noted, "orders alice\norders alice\n", "exactly two runs");
    // Only its owner sees it, on this replica too.
    let other = call(&second, &bob, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(other["error"]["code"], -32602, "{other}");

    // Audited: created (tools/call; durable, so the kill did not lose it),
    // claimed (tasks/retry), ended (tasks/end).
    let store = db
        .store(std::sync::Arc::new(teamgate::store::ManualClock::new(0)))
        .await;
    let ended = |r: &AuditRecord| r.target == "migrate" && r.method == "tasks/end";
    let records = audit_until(&store, Some("alice"), |r| r.iter().any(ended)).await;
    let methods: Vec<_> = (records.iter())
        .filter(|r| r.target == "migrate")
        .map(|r| (r.method.clone(), r.outcome.clone()))
        .collect();
    let outcome = |method: &str| {
        (methods.iter())
            .find(|(m, _)| m == method)
            .map(|(_, o)| o.clone())
            .unwrap_or_else(|| panic!("no {method} record: {methods:?}"))
    };
    assert_eq!(outcome("tools/call"), "task");
    let retried = outcome("tasks/retry");
    assert!(
        retried.contains("run 2") && retried.contains(&id),
        "{retried}"
    );
    assert_eq!(outcome("tasks/end"), "ok", "{methods:?}");
    drop(second);
    db.cleanup().await;
}

#[test]
fn task_retry_keys_are_checked() {
    let refused = |tool: Value| {
        let mut config = test_config();
        let mut tool = tool;
        tool["name"] = "t".into();
        tool["description"] = "d".into();
        tool["program"] = "/bin/true".into();
        config
            .tools
            .command
            .push(serde_json::from_value(tool).unwrap());
        let problems: Vec<String> = config.problems().iter().map(|p| p.to_string()).collect();
        problems.join("\n")
    };
    let max_alone = refused(json!({"task_retry_max": 2}));
    assert!(
        max_alone.contains("task_retry_max") && max_alone.contains("needs task_retry = true"),
        "{max_alone}"
    );
    let too_many = refused(json!({"task_retry": true, "task_retry_max": 50}));
    assert!(too_many.contains("from 1 to 10"), "{too_many}");
    let forbidden = refused(json!({"task_retry": true, "task": "forbidden"}));
    assert!(forbidden.contains("task = \"forbidden\""), "{forbidden}");
    let approval = json!({"task_retry": true, "approval": {"group": "leads"}});
    let approved = refused(approval);
    assert!(
        approved.contains("cannot be combined with approval"),
        "{approved}"
    );
    assert_eq!(
        refused(json!({"task_retry": true})),
        "",
        "task_retry alone is fine"
    );
}
