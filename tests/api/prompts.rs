//! Declared prompts, from TOML and from Markdown front matter: with and
//! without arguments, a missing required argument refused, completion from
//! declared values and from a docs source.

use serde_json::{Value, json};
use teamgate::config::PromptConfig;

use crate::{docs_source::docs, helpers::spawn_app_with, sdk};

fn prompt(value: Value) -> PromptConfig {
    serde_json::from_value(value).expect("a valid [[prompts]]")
}

#[tokio::test]
async fn prompts_render_their_arguments_and_complete_them() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(
        folder.path().join("release.md"),
        "---\nname: release_notes\ntitle: Release notes\ndescription: Drafts release notes\narguments:\n  - name: version\n    required: true\n---\nNotes for {{version}}.\n",
    )
    .unwrap();
    let guides = tempfile::tempdir().unwrap();
    std::fs::write(guides.path().join("onboarding.md"), "# Onboarding\n").unwrap();
    let folder_path = folder.path().to_string_lossy().into_owned();
    let app = spawn_app_with(|c| {
        c.sources.docs = vec![docs("guides", guides.path(), false)];
        c.prompt_files.folders = vec![folder_path];
        c.prompts = vec![
            prompt(json!({"name": "standup", "description": "Daily standup",
                "template": "What did the team ship yesterday?"})),
            prompt(json!({"name": "incident", "description": "Incident summary",
                "template": "Summarise the {{severity}} incident on {{service}}. {{context}}",
                "arguments": [
                    {"name": "service", "required": true, "values": ["api", "web", "billing"]},
                    {"name": "severity", "required": true},
                    {"name": "context"}]})),
            prompt(json!({"name": "explain", "description": "Explain a guide",
                "template": "Explain {{path}}",
                "arguments": [{"name": "path", "required": true, "complete_from": "docs:guides"}]})),
        ];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let names: Vec<String> = client
        .list_all_prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    for name in [
        "standup",
        "incident",
        "explain",
        "release_notes",
        "teamgate_guide",
    ] {
        assert!(names.contains(&name.to_owned()), "{name} in {names:?}");
    }

    let get = |name: &str, arguments: Value| {
        let params = rmcp::model::GetPromptRequestParams::new(name.to_owned())
            .with_arguments(arguments.as_object().unwrap().clone());
        let client = &client;
        async move { client.get_prompt(params).await }
    };
    let standup = serde_json::to_value(get("standup", json!({})).await.unwrap()).unwrap();
    assert_eq!(
        standup["messages"][0]["content"]["text"],
        "What did the team ship yesterday?"
    );
    let incident = get("incident", json!({"service": "api", "severity": "SEV2"}))
        .await
        .unwrap();
    let incident = serde_json::to_value(incident).unwrap();
    assert_eq!(
        incident["messages"][0]["content"]["text"],
        "Summarise the SEV2 incident on api. "
    );
    let release = serde_json::to_value(
        get("release_notes", json!({"version": "1.4"}))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(release["messages"][0]["content"]["text"], "Notes for 1.4.");

    let missing = get("incident", json!({"service": "api"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(missing.contains("severity"), "{missing}");

    let values = client
        .complete_prompt_argument("incident", "service", "b", None)
        .await
        .unwrap()
        .values;
    assert_eq!(values, ["billing"]);
    let paths = client
        .complete_prompt_argument("explain", "path", "", None)
        .await
        .unwrap()
        .values;
    // Paths relative to the configured folder itself (issue 33).
    assert_eq!(paths, ["onboarding.md"]);
    client.cancel().await.unwrap();
}
