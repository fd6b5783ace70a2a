use std::time::{Duration, Instant};

use serde_json::Value;

use super::*;

/// bench/catalog: nine public MCP servers' 155 tools, named as teamgate
/// names upstream tools (`<key>_<tool>`), and 79 hand-written tasks.
fn catalog() -> (Vec<Tool>, Vec<(String, Vec<String>)>) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/catalog");
    let read = |file: &str| -> Value {
        let text = std::fs::read_to_string(root.join(file)).expect("reading bench/catalog");
        serde_json::from_str(&text).expect("bench/catalog is JSON")
    };
    let mut tools = Vec::new();
    for (key, listed) in read("tools.json").as_object().expect("a map") {
        for tool in listed.as_array().expect("an array") {
            let mut tool = tool.clone();
            let name = format!("{key}_{}", tool["name"].as_str().expect("a name"));
            tool["name"] = Value::String(name);
            tools.push(serde_json::from_value::<Tool>(tool).expect("a tool"));
        }
    }
    let tasks = read("tasks.json")
        .as_array()
        .expect("an array")
        .iter()
        .map(|task| {
            let right = task["right"].as_array().expect("names");
            let right = right.iter().map(|r| r.as_str().unwrap().to_owned());
            (task["query"].as_str().unwrap().to_owned(), right.collect())
        })
        .collect();
    (tools, tasks)
}

fn tool(name: &str, description: &str) -> Tool {
    serde_json::from_value(serde_json::json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object"},
    }))
    .unwrap()
}

fn all(_: &str) -> bool {
    true
}

#[test]
fn the_catalog_tasks_find_their_tools() {
    let (tools, tasks) = catalog();
    assert_eq!(tools.len(), 155);
    let index = ToolIndex::build(&tools);
    let (mut at1, mut at3) = (0, 0);
    for (query, right) in &tasks {
        let found = index.search(query, 3, all);
        let rank = found.iter().position(|name| right.contains(name));
        at1 += usize::from(rank == Some(0));
        at3 += usize::from(rank.is_some());
        if rank != Some(0) {
            let at = rank.map_or("miss".to_owned(), |r| format!("at {}", r + 1));
            println!("{at}: {query:?}: {found:?}, want {right:?}");
        }
    }
    let n = tasks.len() as f64;
    let (r1, r3) = (at1 as f64 / n, at3 as f64 / n);
    println!(
        "recall@1 {r1:.3} recall@3 {r3:.3} over {} tasks",
        tasks.len()
    );
    assert!(r3 >= 0.9, "recall@3 {r3:.3} < 0.9");
}

#[test]
fn hidden_tools_are_filtered_before_the_cut() {
    let (tools, _) = catalog();
    let index = ToolIndex::build(&tools);
    let query = "open a pull request";
    let best = index.search(query, 5, all);
    assert_eq!(best[0], "github_create_pull_request");
    let hidden = |name: &str| name != "github_create_pull_request";
    let found = index.search(query, 5, hidden);
    assert_eq!(found.len(), 5);
    assert!(!found.contains(&best[0]));
    assert_eq!(found[..4], best[1..5], "the others keep their order");
    // One upstream only: still `limit` results, all of it.
    let gitlab = |name: &str| name.starts_with("gitlab_");
    let found = index.search("create a pull request on github", 4, gitlab);
    assert_eq!(found.len(), 4);
    assert!(found.iter().all(|n| gitlab(n)), "{found:?}");
    // Nothing permitted: nothing found, not even a count.
    assert!(index.search(query, 5, |_| false).is_empty());
}

#[test]
fn limits_are_bounded() {
    let (tools, _) = catalog();
    let index = ToolIndex::build(&tools);
    assert_eq!(index.len(), 155);
    assert!(index.search("github", 0, all).is_empty());
    assert_eq!(index.search("github", 1, all).len(), 1);
    assert_eq!(index.search("github", 10_000, all).len(), 26);
    let many = "github gitlab file directory page browser kubernetes slack memory";
    assert_eq!(index.search(many, 10_000, all).len(), ToolIndex::MAX_LIMIT);
}

#[test]
fn odd_queries_never_panic() {
    let (tools, _) = catalog();
    let index = ToolIndex::build(&tools);
    let long = "create a pull request ".repeat(500);
    assert!(long.len() >= 10_000);
    let queries = [
        "",
        "   \t\n",
        "\"",
        "\"unclosed",
        "AND(",
        "(((",
        ")",
        "a AND OR NOT b",
        "title:foo",
        "+-!^~*?:\\/",
        "[1 TO 5]",
        "{}",
        "*",
        "ünïcödé façade",
        "日本語のページ",
        "🚀🔥 deploy",
        "\u{0}\u{7f}",
        "a\u{200b}b",
        "k8s/kube",
        "#",
        "#42",
        "https://",
        "...",
        "𝔘𝔫𝔦",
        &long,
    ];
    for query in queries {
        let found = index.search(query, 5, all);
        assert!(found.len() <= 5, "{query:?}");
    }
    for query in ["", "  ", "the a of", "?!"] {
        assert!(index.search(query, 5, all).is_empty(), "{query:?}");
    }
    assert!(!index.search(&long, 5, all).is_empty());
    let empty = ToolIndex::build(&[]);
    assert!(empty.is_empty());
    assert!(empty.search("anything", 5, all).is_empty());
}

#[test]
fn the_index_is_shared_across_requests() {
    fn shared<T: Send + Sync + 'static>() {}
    shared::<ToolIndex>();
}

#[test]
fn names_split_into_words() {
    assert_eq!(
        words("github_create_pull_request"),
        "github create pull request"
    );
    assert_eq!(words("API-post-search"), "API post search");
    assert_eq!(
        words("getUserProfile.v2"),
        "getUserProfile get User Profile v2"
    );
    assert_eq!(words("HTTPServer"), "HTTPServer HTTP Server");
    assert_eq!(words("GitHub"), "GitHub Git Hub");
    assert_eq!(words("k8s_kubectl_get"), "k8s kubectl get");
}

#[test]
fn synonyms_and_shapes_add_words() {
    let terms = synonyms::terms("open a PR");
    let has = |t: &str| terms.iter().any(|(term, _)| term == t);
    assert!(has("pull") && has("request") && has("creat"), "{terms:?}");
    let terms = synonyms::terms("go to example.com");
    let has = |t: &str| terms.iter().any(|(term, _)| term == t);
    assert!(has("navig") && has("url"), "{terms:?}");
    // The words of an idiom count for less than the query's own.
    let terms = synonyms::terms("pull up Jordan's profile");
    let weight = |t: &str| terms.iter().find(|(term, _)| term == t).map(|(_, w)| *w);
    assert!(weight("pull") < weight("jordan"), "{terms:?}");
    assert_eq!(weight("profil"), Some(1.0));
}

#[test]
fn a_tool_is_found_by_its_parameters_title_and_description() {
    let mut with_schema = tool("deploy_app", "Ships it.");
    with_schema.input_schema = std::sync::Arc::new(
        serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": {"targetRegion": {"type": "string", "enum": ["eu-west", "us-east"]}},
        }))
        .unwrap(),
    );
    let mut titled = tool("x1", "");
    titled.title = Some("Weather Forecast".into());
    let tools = [
        with_schema,
        titled,
        tool("other", "Forecasts nothing at all."),
    ];
    let index = ToolIndex::build(&tools);
    assert_eq!(index.search("region", 3, all), ["deploy_app"]);
    assert_eq!(index.search("us east", 3, all), ["deploy_app"]);
    assert_eq!(index.search("forecasting", 3, all), ["x1", "other"]);
}

#[test]
fn building_and_searching_are_fast() {
    let (tools, tasks) = catalog();
    let index = ToolIndex::build(&tools);
    let started = Instant::now();
    let rounds = 5;
    for _ in 0..rounds {
        std::hint::black_box(ToolIndex::build(&tools));
    }
    let build = started.elapsed() / rounds;
    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..5 {
        for (query, _) in &tasks {
            let started = Instant::now();
            std::hint::black_box(index.search(query, 3, all));
            times.push(started.elapsed());
        }
    }
    times.sort();
    let p50 = times[times.len() / 2];
    let p95 = times[times.len() * 95 / 100];
    let release = !cfg!(debug_assertions);
    println!(
        "{} build of {} tools {build:?}, search p50 {p50:?} p95 {p95:?} ({} searches)",
        if release { "release" } else { "debug" },
        tools.len(),
        times.len()
    );
    // The targets are 100 ms and 5 ms in release; debug builds are slower.
    let (build_max, p95_max) = if release { (100, 5) } else { (1_000, 50) };
    assert!(build < Duration::from_millis(build_max), "build {build:?}");
    assert!(p95 < Duration::from_millis(p95_max), "p95 {p95:?}");
}

/// Queries written after the tuning, against tools the catalog tasks do
/// not all ask for, never tuned on: how far the ranking carries beyond
/// tasks.json (35 queries; recall@1 0.74, recall@3 0.97 when written).
#[test]
fn other_queries_find_their_tools_too() {
    let (tools, _) = catalog();
    let index = ToolIndex::build(&tools);
    let cases = [
        (
            "create a new repository on github called demo",
            "github_create_repository",
        ),
        (
            "send a message to the #random channel",
            "slack_slack_post_message",
        ),
        ("show kubernetes deployments", "k8s_kubectl_get"),
        ("restart the nginx deployment", "k8s_kubectl_rollout"),
        (
            "upload a file in the browser",
            "playwright_browser_file_upload",
        ),
        ("hover over the menu", "playwright_browser_hover"),
        (
            "resize the browser window to 800x600",
            "playwright_browser_resize",
        ),
        (
            "wait until the page shows Done",
            "playwright_browser_wait_for",
        ),
        (
            "uninstall the redis helm release",
            "k8s_uninstall_helm_chart",
        ),
        ("list my gitlab projects", "gitlab_search_repositories"),
        ("search github users named torvalds", "github_search_users"),
        ("read these three files at once", "fs_read_multiple_files"),
        (
            "what relations are in the knowledge graph",
            "memory_read_graph",
        ),
        ("list notion users", "notion_API-get-users"),
        ("delete a block in notion", "notion_API-delete-a-block"),
        ("get the pod's logs", "k8s_kubectl_logs"),
        ("stop forwarding the port", "k8s_stop_port_forward"),
        ("press Enter", "playwright_browser_press_key"),
        (
            "run some javascript on the page",
            "playwright_browser_evaluate",
        ),
        ("show the directory tree of src", "fs_directory_tree"),
        ("create a new branch on gitlab", "gitlab_create_branch"),
        ("who am I in notion", "notion_API-get-self"),
        ("kubectl delete pod foo", "k8s_kubectl_delete"),
        ("check the kubernetes server is alive", "k8s_ping"),
        ("search code for TODO in github", "github_search_code"),
        ("get the details of issue 5 on GitHub", "github_get_issue"),
        ("rm the old deployment", "k8s_kubectl_delete"),
        ("ls the home folder", "fs_list_directory"),
        ("close the browser", "playwright_browser_close"),
        ("list PRs on github", "github_list_pull_requests"),
        ("upgrade the helm chart", "k8s_upgrade_helm_chart"),
        ("link two entities in memory", "memory_create_relations"),
        (
            "drag the card onto the done column",
            "playwright_browser_drag",
        ),
        (
            "take an accessibility snapshot",
            "playwright_browser_snapshot",
        ),
        ("merge the MR", "gitlab_create_merge_request"),
    ];
    let (mut at1, mut at3) = (0, 0);
    for (q, want) in cases {
        let found = index.search(q, 3, all);
        let rank = found.iter().position(|n| n == want);
        at1 += usize::from(rank == Some(0));
        at3 += usize::from(rank.is_some());
        if rank != Some(0) {
            println!("{rank:?}: {q:?}: {found:?} want {want}");
        }
    }
    let n = cases.len() as f64;
    let (r1, r3) = (at1 as f64 / n, at3 as f64 / n);
    println!("other queries: recall@1 {r1:.3} recall@3 {r3:.3} over {n} queries");
    assert!(r3 >= 0.8, "recall@3 {r3:.3} < 0.8");
}
