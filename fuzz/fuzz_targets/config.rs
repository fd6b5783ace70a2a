//! Configuration loading as `teamgate check-config` does it (figment, serde,
//! then the cross-key validation), from a TOML file: never a panic; a valid
//! configuration prints as TOML that loads again to the same text; and a
//! secret value (`mcp.request_state_keys`, `telemetry.metrics.token`, the
//! password of `store.url`) appears neither in what is printed nor in any
//! error. `@S@` in the input stands for a random value of this process, so
//! a secret in the output can only have come from where the input put it.
#![no_main]

use std::{path::PathBuf, sync::OnceLock};

use libfuzzer_sys::fuzz_target;
use teamgate::config::DatabaseUrl;
use toml::Value;

struct Fixture {
    secret: String,
    file: PathBuf,
    again: PathBuf,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        use std::hash::{BuildHasher, RandomState};
        let random = |n| RandomState::new().hash_one(n);
        let dir = tempfile::tempdir().expect("a temporary folder").keep();
        Fixture {
            secret: format!("{:016x}{:016x}", random(1), random(2)),
            file: dir.join("fuzzed.toml"),
            again: dir.join("printed.toml"),
        }
    })
}

/// Whether every occurrence of `secret` in `table` is at a key that holds a
/// secret, so that printing it anywhere would be a leak.
fn only_in_secrets(table: &toml::Table, secret: &str) -> bool {
    let mut found = Vec::new();
    occurrences(
        &Value::Table(table.clone()),
        &mut Vec::new(),
        secret,
        &mut found,
    );
    !found.is_empty()
        && found.iter().all(|(path, text)| match path.as_slice() {
            [a, b, _] if a == "mcp" && b == "request_state_keys" => true,
            [a, b, c] if a == "telemetry" && b == "metrics" && c == "token" => true,
            [a, b] if a == "store" && b == "url" => {
                let passwords = DatabaseUrl::new(text.as_str()).passwords();
                passwords
                    .first()
                    .is_some_and(|p| p.matches(secret).count() == text.matches(secret).count())
            }
            _ => false,
        })
}

/// The key path and text of every key or string holding `secret`.
fn occurrences(
    value: &Value,
    path: &mut Vec<String>,
    secret: &str,
    out: &mut Vec<(Vec<String>, String)>,
) {
    match value {
        Value::String(s) if s.contains(secret) => out.push((path.clone(), s.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                occurrences(item, path, secret, out);
                path.pop();
            }
        }
        Value::Table(table) => {
            for (key, item) in table {
                path.push(key.clone());
                if key.contains(secret) {
                    out.push((path.clone(), key.clone()));
                }
                occurrences(item, path, secret, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fuzz_target!(|text: &str| {
    let fixture = fixture();
    let text = text.replace("@S@", &fixture.secret);
    std::fs::write(&fixture.file, &text).unwrap();
    let result = teamgate::fuzzing::check_config(&fixture.file);
    let secret_only_in_secrets = text
        .parse::<toml::Table>()
        .is_ok_and(|table| only_in_secrets(&table, &fixture.secret));
    let shown = match &result {
        Ok(printed) | Err(printed) => printed,
    };
    if secret_only_in_secrets {
        assert!(
            !shown.contains(&fixture.secret),
            "a secret is shown: {shown}"
        );
    }
    // What check-config prints is a configuration that loads as printed
    // (secrets print as `<redacted>`, so their keys may differ).
    if let Ok(printed) = result {
        std::fs::write(&fixture.again, &printed).unwrap();
        let again = teamgate::fuzzing::check_config(&fixture.again);
        if !printed.contains("<redacted>") {
            assert_eq!(
                again.as_ref(),
                Ok(&printed),
                "printed config does not load to itself"
            );
        }
    }
});
