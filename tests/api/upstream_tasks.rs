//! Upstream tasks (issue 66 part 2): an upstream on the official Python SDK
//! serving the tasks extension (tests/interop/tasks_upstream_py.py) over a
//! `protocol = "2026-07-28"` link. A member whose call holds no task handle
//! (a 2025-era session through the official Rust SDK client, or a
//! 2026-07-28 request not declaring tasks) gets the upstream task's result
//! within the call; a call over its time limit cancels the task upstream.
//! A member declaring tasks gets a task of teamgate's mapped to the
//! upstream's, private to them, reached from any replica: two `teamgate
//! serve` processes on one PostgreSQL database, the first killed mid-task.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::json;
use teamgate::{
    config::{AuthMode, UpstreamConfig},
    store::TaskRepo,
};

use crate::{
    binary::serve,
    databases::TestDb,
    helpers::{TestApp, audit_until, repo_path, spawn_app_with},
    sdk,
    sec44_upreg::python,
    tasks::{call, call_as, settled},
    upstream_oauth::token,
};

/// The upstream over HTTP, on a port of its own: it outlives a replica.
pub(crate) struct Served(Child, pub(crate) String);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn over_http(python: &str) -> Served {
    let mut child = Command::new(python)
        .arg(repo_path("tests/interop/tasks_upstream_py.py"))
        .arg("http")
        .stdout(Stdio::piped())
        .spawn()
        .expect("the upstream starts");
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("listening on ").map(str::to_owned);
    Served(
        child,
        url.unwrap_or_else(|| panic!("the upstream said {line:?}")),
    )
}

/// `[[upstreams]]` for the upstream at `url`, on a 2026-07-28 link.
fn remote(url: &str) -> String {
    format!(
        "[tools]\nhttp_allowlist = [\"{url}\"]\n[[upstreams]]\nname = \"builds\"\nurl = \"{url}\"\n\
         pin = false\nprotocol = \"2026-07-28\"\n"
    )
}

/// teamgate (`adjust`ed) in front of the upstream over HTTP on a
/// 2026-07-28 link; the upstream lives as long as the `Served`.
pub(crate) async fn fronted(
    python: &str,
    adjust: impl FnOnce(&mut teamgate::config::Config),
) -> (TestApp, Served) {
    let upstream = over_http(python);
    let table: toml::Table = toml::from_str(&remote(&upstream.1)).unwrap();
    let entry: UpstreamConfig = table["upstreams"][0].clone().try_into().unwrap();
    let allow = upstream.1.clone();
    let app = spawn_app_with(move |c| {
        c.tools.http_allowlist = vec![allow];
        c.upstreams = vec![entry];
        adjust(c);
    })
    .await;
    (app, upstream)
}

fn upstream(python: &str, protocol: &str) -> UpstreamConfig {
    let script = repo_path("tests/interop/tasks_upstream_py.py")
        .display()
        .to_string();
    let entry = format!(
        "name = \"builds\"\ncommand = {python:?}\nargs = [{script:?}, \"stdio\"]\n\
         pin = false\nprotocol = \"{protocol}\"\n[tools.hang]\ntimeout = \"2s\"\n"
    );
    toml::from_str(&entry).unwrap()
}

async fn app(python: &str, protocol: &str) -> TestApp {
    let upstream = upstream(python, protocol);
    spawn_app_with(move |c| {
        c.auth.mode = AuthMode::Required;
        c.upstreams = vec![upstream];
    })
    .await
}

/// alice's audit records once `count` of them name `target`: the audit
/// writer writes in batches after the replies (bounded wait).
async fn trail(app: &TestApp, target: &str, count: usize) -> Vec<teamgate::store::AuditRecord> {
    audit_until(&app.store, Some("alice"), |records| {
        records.iter().filter(|r| r.target == target).count() >= count
    })
    .await
}

/// The SDK client once the upstream's tools are listed (bounded).
async fn connected(app: &TestApp, token: &str) -> sdk::Client {
    let (client, _heard) = sdk::connect_as(&app.url, Some(token), None).await;
    for _ in 0..300 {
        let tools = client.list_all_tools().await.unwrap();
        if tools.iter().any(|t| t.name == "builds_slow") {
            return client;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the upstream's tools were not listed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_without_a_task_handle_gets_the_upstream_tasks_result_and_a_late_one_is_cancelled() {
    let Some(python) = python() else { return };
    let app = app(&python, "2026-07-28").await;
    let alice = token(&app, "alice", &["*"]).await;
    let client = connected(&app, &alice).await;

    // A 2025-era session: the upstream made a task; teamgate waited for it.
    let built = sdk::call(&client, "builds_slow", json!({"seconds": 1})).await;
    assert_eq!(sdk::text(&built), "built after 1s", "{built}");
    assert_ne!(built["isError"], true);
    let seen = sdk::call(&client, "builds_seen", json!({})).await;
    assert_eq!(
        sdk::text(&seen),
        "completed",
        "one task, made upstream: {seen}"
    );

    // A 2026-07-28 request that does not declare tasks: the same.
    let params = json!({"name": "builds_slow", "arguments": {"seconds": 0.5}});
    let reply = call_as(&app, &alice, "tools/call", params, json!({})).await;
    let result = &reply["result"];
    assert_eq!(result["resultType"], "complete", "no task handle: {reply}");
    assert_eq!(result["content"][0]["text"], "built after 0.5s", "{reply}");

    // Over its time limit (2 s): the call ends saying so, and the task is
    // cancelled upstream, not left running there.
    let hung = sdk::call(&client, "builds_hang", json!({})).await;
    assert_eq!(hung["isError"], true, "{hung}");
    assert!(sdk::text(&hung).contains("did not finish within"), "{hung}");
    let mut statuses = String::new();
    for _ in 0..50 {
        let seen = sdk::call(&client, "builds_seen", json!({})).await;
        statuses = sdk::text(&seen).to_owned();
        if statuses.ends_with("cancelled") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(statuses, "completed\ncompleted\ncancelled");

    // Audited as any upstream call, the upstream named.
    let records = trail(&app, "builds_slow", 2).await;
    let slow: Vec<_> = (records.iter())
        .filter(|r| r.target == "builds_slow")
        .collect();
    assert_eq!(slow.len(), 2, "{slow:?}");
    assert!(
        slow.iter()
            .all(|r| r.outcome == "ok" && r.upstream == "builds")
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn on_a_2025_link_the_same_upstream_answers_in_the_call() {
    let Some(python) = python() else { return };
    let app = app(&python, "2025-11-25").await;
    let alice = token(&app, "alice", &["*"]).await;
    let client = connected(&app, &alice).await;
    let built = sdk::call(&client, "builds_slow", json!({"seconds": 0.2})).await;
    assert_eq!(sdk::text(&built), "built after 0.2s", "{built}");
    // No task was made: teamgate did not declare the extension upstream.
    let seen = sdk::call(&client, "builds_seen", json!({})).await;
    assert_eq!(sdk::text(&seen), "", "{seen}");
    client.cancel().await.unwrap();
}

#[test]
fn protocol_takes_the_two_revisions_only() {
    let entry = |protocol: &str| {
        let text =
            format!("name = \"u\"\nurl = \"http://127.0.0.1:1/mcp\"\nprotocol = \"{protocol}\"\n");
        toml::from_str::<UpstreamConfig>(&text).map_err(|e| e.to_string())
    };
    assert!(entry("2026-07-28").is_ok());
    assert!(entry("2025-11-25").is_ok());
    let refused = entry("2026").unwrap_err();
    assert!(refused.contains("2026-07-28"), "{refused}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_member_declaring_tasks_gets_a_private_task_of_teamgates_mapped_to_the_upstreams() {
    let Some(python) = python() else { return };
    let (app, _upstream) = fronted(&python, |c| {
        c.auth.mode = AuthMode::Required;
        c.tasks.heartbeat_timeout = Duration::from_secs(2);
        c.tasks.poll_interval = Duration::from_millis(200);
    })
    .await;
    let alice = token(&app, "alice", &["*"]).await;
    let bob = token(&app, "bob", &["*"]).await;
    let client = connected(&app, &alice).await;

    let created = call(
        &app,
        &alice,
        "tools/call",
        json!({"name": "builds_slow",
        "arguments": {"seconds": 1}}),
    )
    .await;
    let created = &created["result"];
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    // teamgate's id, not the upstream's: the row keeps that one.
    let row = app.store.task(&id, "alice").await.unwrap().unwrap();
    let theirs = row.upstream_task.clone().unwrap();
    assert_ne!(theirs, id);
    assert_eq!(row.upstream.as_deref(), Some("builds"));
    // Nobody else sees it.
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let params = json!({"taskId": id, "inputResponses": {}});
        let refused = call(&app, &bob, method, params).await;
        assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
    }
    let done = settled(&app, &alice, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["taskId"], id.as_str());
    assert_eq!(
        done["result"]["content"][0]["text"], "built after 1s",
        "{done}"
    );
    // Its end is on the row: later reads need no upstream.
    let row = app.store.task(&id, "alice").await.unwrap().unwrap();
    assert_eq!(row.status, "completed");

    // A long one outlives the heartbeat timeout (no replica runs it, so no
    // sweep fails it), then a cancel reaches the upstream.
    let hung = call(&app, &alice, "tools/call", json!({"name": "builds_hang"})).await;
    let hung = hung["result"]["taskId"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let still = call(&app, &alice, "tasks/get", json!({"taskId": hung})).await;
    assert_eq!(still["result"]["status"], "working", "{still}");
    let ack = call(&app, &alice, "tasks/cancel", json!({"taskId": hung})).await;
    assert!(ack.get("error").is_none(), "{ack}");
    assert_eq!(settled(&app, &alice, &hung).await["status"], "cancelled");
    let seen = sdk::call(&client, "builds_seen", json!({})).await;
    assert_eq!(sdk::text(&seen), "completed\ncancelled", "{seen}");

    // Audited: created (tools/call, task), ended once (tasks/end), upstream named.
    let records = trail(&app, "builds_slow", 2).await;
    let of_slow: Vec<_> = records
        .iter()
        .filter(|r| r.target == "builds_slow")
        .collect();
    let methods: Vec<(&str, &str)> = of_slow
        .iter()
        .map(|r| (r.method.as_str(), r.outcome.as_str()))
        .collect();
    assert_eq!(methods.len(), 2, "{methods:?}");
    assert!(methods.contains(&("tools/call", "task")), "{methods:?}");
    let end = format!("ok (task {id})");
    assert!(
        methods.contains(&("tasks/end", end.as_str())),
        "{methods:?}"
    );
    assert!(of_slow.iter().all(|r| r.upstream == "builds"));
    client.cancel().await.unwrap();
}

/// A mapped task whose tool failed ends `completed` with the upstream's
/// `isError` result, and is audited `tool_error`, as an own task's is.
#[tokio::test(flavor = "multi_thread")]
async fn a_mapped_tasks_tool_error_is_audited_as_one() {
    let Some(python) = python() else { return };
    let (app, _upstream) = fronted(&python, |c| c.auth.mode = AuthMode::Required).await;
    let alice = token(&app, "alice", &["*"]).await;
    let client = connected(&app, &alice).await;
    let args = json!({"name": "builds_slow", "arguments": {"seconds": -1}});
    let created = call(&app, &alice, "tools/call", args).await;
    let id = created["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let done = settled(&app, &alice, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    let records = trail(&app, "builds_slow", 2).await;
    let end = (records.iter())
        .find(|r| r.target == "builds_slow" && r.method == "tasks/end")
        .expect("the task's end is audited");
    assert_eq!(end.outcome, format!("tool_error (task {id})"));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_task_outlives_the_replica_that_created_it() {
    let (Some(python), Some(db)) = (python(), TestDb::postgres().await) else {
        return;
    };
    let upstream = over_http(&python);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("teamgate.toml");
    let text = format!(
        "[reload]\nwatch = false\n[mcp]\nrequest_state_keys = [\"upstream-tasks-key-0123456789abcdef01234\"]\n\
         [tasks]\nheartbeat_timeout = \"2s\"\npoll_interval = \"200ms\"\n{}",
        remote(&upstream.1)
    );
    std::fs::write(&config, text).unwrap();
    let env = [("TEAMGATE__STORE__URL", db.url.as_str())];
    let mut first = serve(&config, &env);
    let second = serve(&config, &env);
    let alice = first.token("alice", &[]);
    let ask = |served: &crate::binary::Served, method: &str, params: serde_json::Value| {
        let (url, alice) = (served.url.clone(), alice.clone());
        let method = method.to_owned();
        async move { crate::task_retry::call_at(&url, &alice, &method, params).await }
    };
    // The upstream's tools are listed once its link is up (bounded).
    let mut created = json!(null);
    for _ in 0..100 {
        created = ask(
            &first,
            "tools/call",
            json!({"name": "builds_slow", "arguments": {"seconds": 3}}),
        )
        .await;
        if created["result"]["resultType"] == "task" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let logged = first.lines().join("\n");
    assert_eq!(
        created["result"]["resultType"], "task",
        "{created}\n{logged}"
    );
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    first.child.kill().unwrap();
    first.child.wait().unwrap();

    // The other replica answers for it: the upstream ran it to its end
    // (a task of teamgate's own would have failed with its replica).
    let mut done = json!(null);
    for _ in 0..100 {
        // Until its link to the upstream is up, this replica says so (-32603).
        done = ask(&second, "tasks/get", json!({"taskId": id})).await;
        if done["result"]["status"]
            .as_str()
            .is_some_and(|s| s != "working")
        {
            done = done["result"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "built after 3s",
        "{done}"
    );
    drop(second);
    db.cleanup().await;
}
