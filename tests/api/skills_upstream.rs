//! Issue 66 part 4: an upstream's skills (SEP-2640) pass through like its
//! resources. The upstream is another teamgate serving a files source's
//! skills; the gateway has a source with the same skill URIs, so the
//! upstream's are renamed `upstream://team/...`: listed with their
//! manifests, fetched live through the upstream (an edit upstream shows),
//! read through it, and needing the upstream's scopes.

use rmcp::model::{GetSkillRequestParams, ReadResourceRequestParams};
use serde_json::json;
use teamgate::config::AuthMode;

use crate::{
    helpers::spawn_app_with,
    sdk,
    skills::{FILES, SKILL, app, as_on_disk, as_on_disk_at, bytes_of, file, playbooks, serve},
    upstream_oauth::token,
};

#[tokio::test]
async fn an_upstreams_skills_pass_through_renamed_where_teamgate_has_the_uri() {
    // The upstream: another teamgate serving the same tree's skills.
    let theirs = playbooks();
    let upstream = app(theirs.path(), AuthMode::None).await;
    let (url, ours) = (upstream.url.clone(), playbooks());
    let base = url.trim_end_matches("mcp").to_owned();
    let own_dir = ours.path().to_owned();
    let gateway = spawn_app_with(move |c| {
        serve(c, &own_dir, AuthMode::Required);
        c.tools.http_allowlist = vec![base];
        c.upstreams = vec![
            serde_json::from_value(json!({
                "name": "team", "url": url, "pin": false, "scopes": ["team:read"],
            }))
            .unwrap(),
        ];
    })
    .await;
    let member = token(&gateway, "ann", &["playbooks:read", "team:read"]).await;
    let (client, _) = sdk::connect_as(&gateway.url, Some(&member), None).await;
    let mut skills = Vec::new();
    for _ in 0..300 {
        skills = client.list_skills(None).await.unwrap().skills;
        if skills.len() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let skills = serde_json::to_value(&skills).unwrap();
    let renamed = "upstream://team/skill://playbooks/deploy/";
    // teamgate's own source has skill://playbooks/...: the upstream's are renamed.
    let (own, through) = match skills[0]["uri"] == SKILL {
        true => (&skills[0], &skills[1]),
        false => (&skills[1], &skills[0]),
    };
    as_on_disk(own, ours.path(), "own");
    as_on_disk_at(through, theirs.path(), renamed, "upstream's");

    // Fetched through the upstream, live: a changed file's digest shows.
    let guide = theirs.path().join("root/deploy/references/GUIDE.md");
    std::fs::write(&guide, "# Guide\n\nChanged upstream.\n").unwrap();
    let got = client
        .get_skill(GetSkillRequestParams::new(format!("{renamed}SKILL.md")))
        .await
        .unwrap();
    let got = serde_json::to_value(&got.skill).unwrap();
    as_on_disk_at(&got, theirs.path(), renamed, "upstream's skills/get");
    for (resource, path) in got["resources"].as_array().unwrap().iter().zip(FILES) {
        let uri = resource["uri"].as_str().unwrap();
        let read = client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap();
        let read = serde_json::to_value(read).unwrap();
        let bytes = bytes_of(&read["contents"][0]);
        assert_eq!(bytes, file(theirs.path(), path), "{uri}");
        assert_eq!(read["contents"][0]["uri"], uri, "named as asked");
    }

    // The upstream's skills need its scopes, as its resources do.
    let own_only = token(&gateway, "bob", &["playbooks:read"]).await;
    let (bob, _) = sdk::connect_as(&gateway.url, Some(&own_only), None).await;
    let seen = bob.list_skills(None).await.unwrap().skills;
    let uris: Vec<&str> = seen.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(uris, [SKILL], "only the own source's skill");
    gateway.stop().await;
    upstream.stop().await;
}
