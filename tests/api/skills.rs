//! Issue 66 part 4: Skills (SEP-2640, `io.modelcontextprotocol/skills`)
//! through teamgate. A files source with `skills = true` serves each folder
//! holding a `SKILL.md` as a skill: the official TypeScript SDK client
//! lists it (`skills/list`), fetches it (`skills/get`) and reads every file
//! of its manifest (`resources/read`), each digest and size matching the
//! bytes on disk; the official Rust SDK client does too, and sees a changed
//! file's new digest; a member without the source's scope sees no skill and
//! is refused `skills/get` and the reads; paths leading out of a skill's
//! folder are refused; a 2026-07-28 request gets the extension's result shape;
//! a docs source serves its folders' skills. An upstream's: `skills_upstream.rs`.

use std::path::Path;

use base64::Engine;
use rmcp::model::{GetSkillRequestParams, ReadResourceRequestParams};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use teamgate::config::{AuthMode, Config};

use crate::{
    helpers::{TestApp, spawn_app_with},
    portal_browser::ts_script,
    sdk,
    upstream_oauth::token,
};

pub(crate) const SKILL: &str = "skill://playbooks/deploy/SKILL.md";
const SKILL_MD: &str = "---\nname: deploy\ndescription: Ship a release the team's way\n\
    license: Apache-2.0\nmetadata:\n  owner: ops\n  version: \"2\"\nallowed-tools: [run_checks]\n\
    ---\n\n# Deploy\n\nRun `scripts/check.sh`, then follow references/GUIDE.md.\n";
/// The manifest's files, by path under `deploy/`: the hidden file, the link
/// out, the file of another extension and the folder without a SKILL.md
/// are none of them.
pub(crate) const FILES: [&str; 4] = [
    "SKILL.md",
    "logo.png",
    "references/GUIDE.md",
    "scripts/check.sh",
];

/// The tree: the skill `deploy`, with a nested folder, a script and a
/// binary file; a hidden file, a link out and a file of another extension in
/// it; a folder that is no skill; a file outside the root.
pub(crate) fn playbooks() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let write = |path: &str, bytes: &[u8]| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    write("deploy/SKILL.md", SKILL_MD.as_bytes());
    write("deploy/references/GUIDE.md", b"# Guide\n\nStep one.\n");
    write("deploy/scripts/check.sh", b"#!/bin/sh\necho ok\n");
    write("deploy/logo.png", &[0x89, b'P', b'N', b'G', 0, 0xff, 0xfe]);
    write("deploy/.draft.md", b"hidden");
    write("deploy/notes.txt", b"not an offered extension");
    write("notes/readme.md", b"not a skill");
    std::fs::write(dir.path().join("outside.md"), "outside the root").unwrap();
    std::os::unix::fs::symlink("../../outside.md", root.join("deploy/link.md")).unwrap();
    dir
}

pub(crate) fn serve(config: &mut Config, dir: &Path, auth: AuthMode) {
    config.auth.mode = auth;
    let root = dir.join("root").display().to_string();
    config.sources.files = vec![
        serde_json::from_value(json!({
            "name": "playbooks", "root": root, "extensions": ["md", "sh", "png"],
            "skills": true, "scopes": ["playbooks:read"],
        }))
        .unwrap(),
    ];
}

pub(crate) async fn app(dir: &Path, auth: AuthMode) -> TestApp {
    let dir = dir.to_owned();
    spawn_app_with(move |c| serve(c, &dir, auth)).await
}

pub(crate) fn file(dir: &Path, path: &str) -> Vec<u8> {
    std::fs::read(dir.join("root/deploy").join(path)).unwrap()
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The entry the extension asks for: the front matter verbatim, every file
/// once with the digest and size of its bytes on disk.
pub(crate) fn as_on_disk(skill: &Value, dir: &Path, who: &str) {
    as_on_disk_at(skill, dir, "skill://playbooks/deploy/", who);
}

/// `as_on_disk` for the skill whose files' URIs start with `base`.
pub(crate) fn as_on_disk_at(skill: &Value, dir: &Path, base: &str, who: &str) {
    assert_eq!(skill["uri"], format!("{base}SKILL.md"), "{who}: {skill}");
    let front = json!({
        "name": "deploy", "description": "Ship a release the team's way", "license": "Apache-2.0",
        "metadata": {"owner": "ops", "version": "2"}, "allowed-tools": ["run_checks"],
    });
    assert_eq!(skill["frontmatter"], front, "{who}");
    let listed: Vec<&Value> = skill["resources"].as_array().unwrap().iter().collect();
    let uris: Vec<&str> = listed.iter().map(|r| r["uri"].as_str().unwrap()).collect();
    let expected: Vec<String> = FILES.iter().map(|p| format!("{base}{p}")).collect();
    assert_eq!(uris, expected, "{who}");
    for (resource, path) in listed.iter().zip(FILES) {
        let bytes = file(dir, path);
        assert_eq!(resource["digest"], digest(&bytes), "{who}: {path}");
        assert_eq!(resource["size"], bytes.len(), "{who}: {path}");
    }
}

/// A read's bytes: its text, or its blob decoded.
pub(crate) fn bytes_of(contents: &Value) -> Vec<u8> {
    match (contents["text"].as_str(), contents["blob"].as_str()) {
        (Some(text), _) => text.as_bytes().to_vec(),
        (None, Some(blob)) => base64::engine::general_purpose::STANDARD
            .decode(blob)
            .unwrap(),
        _ => panic!("neither text nor blob: {contents}"),
    }
}

#[tokio::test]
async fn skills_are_listed_fetched_and_read_by_the_official_ts_client() {
    let dir = playbooks();
    let app = app(dir.path(), AuthMode::Required).await;
    let member = token(&app, "ann", &["playbooks:read"]).await;
    let mut ts = ts_script("ts_skills.mjs");
    ts.args(["--url", &app.url, "--token", &member]);
    let seen = crate::apps::run(ts).await;
    let server = &seen["server"];
    assert_eq!(
        server["extensions"]["io.modelcontextprotocol/skills"],
        json!({})
    );
    assert!(server["resources"].is_object(), "{server}");
    let skills = seen["listed"]["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 1, "only deploy holds a SKILL.md: {skills:?}");
    as_on_disk(&skills[0], dir.path(), "skills/list");
    assert_eq!(
        seen["got"][0]["skill"], skills[0],
        "skills/get is the listed entry"
    );
    for (resource, path) in skills[0]["resources"].as_array().unwrap().iter().zip(FILES) {
        let contents = &seen["read"][resource["uri"].as_str().unwrap()];
        let read = bytes_of(contents);
        assert_eq!(read, file(dir.path(), path), "{path}");
        assert_eq!(
            resource["digest"],
            digest(&read),
            "{path}: verified as a host does"
        );
    }
    let manifest = &seen["read"][SKILL];
    assert_eq!(manifest["mimeType"], "text/markdown");
    assert!(seen["read"]["skill://playbooks/deploy/logo.png"]["blob"].is_string());
    app.stop().await;
}

#[tokio::test]
async fn the_rust_sdk_sees_the_sources_scope_and_changed_files() {
    let dir = playbooks();
    let app = app(dir.path(), AuthMode::Required).await;
    let member = token(&app, "ann", &["playbooks:read"]).await;
    let (client, _) = sdk::connect_as(&app.url, Some(&member), None).await;
    let listed = client.list_skills(None).await.unwrap();
    let entry = serde_json::to_value(&listed.skills).unwrap();
    as_on_disk(&entry[0], dir.path(), "rust skills/list");
    let resources = client.list_all_resources().await.unwrap();
    let manifest = resources.iter().find(|r| r.uri == SKILL).unwrap();
    assert_eq!(
        manifest.description.as_deref(),
        Some("Ship a release the team's way")
    );

    // A changed file: the next entry has its new digest and size.
    let guide = dir.path().join("root/deploy/references/GUIDE.md");
    std::fs::write(&guide, "# Guide\n\nStep one, then step two.\n").unwrap();
    let got = client
        .get_skill(GetSkillRequestParams::new(SKILL))
        .await
        .unwrap();
    as_on_disk(
        &serde_json::to_value(&got.skill).unwrap(),
        dir.path(),
        "after the change",
    );

    // Without the source's scope: no skill, and each request refused with
    // 403 and the challenge naming the scope (the authorization spec's step-up).
    let other = token(&app, "bob", &["resources:read", "tools:*"]).await;
    let (bob, _) = sdk::connect_as(&app.url, Some(&other), None).await;
    let none = bob.list_skills(None).await.unwrap();
    assert!(none.skills.is_empty(), "{none:?}");
    let get = bob.get_skill(GetSkillRequestParams::new(SKILL)).await;
    let reads = ["skill://playbooks/deploy/scripts/check.sh", SKILL]
        .map(|uri| bob.read_resource(ReadResourceRequestParams::new(uri)));
    let mut refusals = vec![format!("{get:?}")];
    for read in reads {
        refusals.push(format!("{:?}", read.await));
    }
    for refused in refusals {
        assert!(
            refused.contains("insufficient_scope")
                && refused.contains("scope=\\\"playbooks:read\\\""),
            "{refused}"
        );
    }
    // skills/get is audited as resources/read is: the fetch, and the refusal with why.
    let mut audited = Vec::new();
    for _ in 0..50 {
        audited = crate::oauth_flow::audited(&app, "skills/get").await;
        if audited.iter().any(|r| r.user == "bob") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let outcome = |user: &str| {
        let record = audited.iter().find(|r| r.user == user && r.target == SKILL);
        record.map(|r| r.outcome.clone()).unwrap_or_default()
    };
    assert_eq!(outcome("ann"), "ok", "{audited:?}");
    let denied = outcome("bob");
    assert!(
        denied.starts_with("denied: bob lacks the scope(s) playbooks:read"),
        "{audited:?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn paths_out_of_a_skills_folder_are_refused_and_2026_results_are_complete() {
    let dir = playbooks();
    let app = app(dir.path(), AuthMode::None).await;
    let (status, replies) = app.modern_call(1, "skills/list", json!({})).await;
    assert_eq!(status, 200);
    let result = &replies[0]["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    assert!(
        result["ttlMs"].is_u64() && result["cacheScope"].is_string(),
        "{result}"
    );
    as_on_disk(&result["skills"][0], dir.path(), "2026-07-28");
    let (_, replies) = app
        .modern_call(2, "skills/get", json!({"uri": SKILL}))
        .await;
    assert_eq!(replies[0]["result"]["skill"], result["skills"][0]);
    assert_eq!(replies[0]["result"]["resultType"], "complete");

    let (_, replies) = app
        .modern_call(
            3,
            "skills/get",
            json!({"uri": "skill://playbooks/notes/SKILL.md"}),
        )
        .await;
    assert_eq!(replies[0]["error"]["code"], -32602, "{replies:?}");
    let message = replies[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("No skill is served at"), "{message}");

    for (id, uri) in [
        (4, "skill://playbooks/deploy/../../outside.md"),
        (5, "skill://playbooks/deploy/%2E%2E/%2E%2E/outside.md"),
        (6, "skill://playbooks/deploy/link.md"),
        (7, "skill://playbooks/deploy/.draft.md"),
        (8, "skill://playbooks/notes/readme.md"),
        (9, "skill://playbooks/deploy/notes.txt"),
    ] {
        let (_, replies) = app
            .modern_call(id, "resources/read", json!({"uri": uri}))
            .await;
        let reply = &replies[0];
        assert!(reply["result"].is_null(), "{uri} must not be read: {reply}");
        assert_eq!(reply["error"]["code"], -32602, "{uri}: {reply}");
        assert!(!reply.to_string().contains("outside the root"), "{uri}");
    }
    let (_, replies) = app
        .modern_call(
            10,
            "resources/read",
            json!({"uri": "skill://playbooks/deploy/scripts/check.sh"}),
        )
        .await;
    assert_eq!(
        replies[0]["result"]["contents"][0]["text"],
        "#!/bin/sh\necho ok\n"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_docs_source_serves_its_folders_skills_with_its_extensions() {
    let dir = playbooks();
    let root = dir.path().join("root");
    let app = spawn_app_with(move |c| {
        let mut docs = crate::docs_source::docs("handbook", &root, false);
        docs.skills = true;
        c.sources.docs = vec![docs];
    })
    .await;
    let (_, replies) = app.modern_call(1, "skills/list", json!({})).await;
    let skills = replies[0]["result"]["skills"].as_array().unwrap().clone();
    assert_eq!(skills.len(), 1, "{replies:?}");
    let skill = &skills[0];
    assert_eq!(skill["uri"], "skill://handbook/deploy/SKILL.md");
    assert_eq!(skill["frontmatter"]["name"], "deploy");
    // Only the docs source's extensions (md, markdown, txt): not the script or the image.
    let files: Vec<&str> = (skill["resources"].as_array().unwrap().iter())
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    let expected = ["SKILL.md", "notes.txt", "references/GUIDE.md"]
        .map(|p| format!("skill://handbook/deploy/{p}"));
    assert_eq!(files, expected);
    for (resource, path) in skill["resources"].as_array().unwrap().iter().zip([
        "SKILL.md",
        "notes.txt",
        "references/GUIDE.md",
    ]) {
        let bytes = file(dir.path(), path);
        assert_eq!(resource["digest"], digest(&bytes), "{path}");
        let (_, replies) = app
            .modern_call(2, "resources/read", json!({"uri": resource["uri"]}))
            .await;
        assert_eq!(
            bytes_of(&replies[0]["result"]["contents"][0]),
            bytes,
            "{path}"
        );
    }
    app.stop().await;
}
