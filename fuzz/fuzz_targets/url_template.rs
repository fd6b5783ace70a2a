//! URL templates of HTTP tools (`providers/http_tool.rs`,
//! `providers/declared/template.rs`): for a template the configuration
//! accepts, whatever the arguments, the URL requested has no `.` or `..`
//! path segment (as the URL parser reads it) and stays under the template's
//! origin and allowed base. Never a panic.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

const BASE: &str = "https://api.example.com/v1";

#[derive(Arbitrary, Debug)]
enum Arg {
    Text(String),
    Number(i64),
    Null,
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// What follows `BASE/` in the template; `{a}`, `{b}`, `{c}` are placeholders.
    rest: String,
    a: Option<Arg>,
    b: Option<Arg>,
    c: Option<Arg>,
}

/// Whether the path of `url` has a dot segment as a WHATWG parser reads
/// it: tabs and newlines removed, `\` a separator too, `%2e` a dot.
fn parser_sees_dot_segment(url: &str) -> bool {
    let url: String = url
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let rest = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    let path = rest.find(['/', '\\']).map_or("", |at| &rest[at..]);
    let path = path.split(['?', '#']).next().unwrap_or_default();
    path.split(['/', '\\']).any(|segment| {
        let plain = segment.to_ascii_lowercase().replace("%2e", ".");
        plain == "." || plain == ".."
    })
}

fuzz_target!(|input: Input| {
    let template = format!("{BASE}/{}", input.rest);
    let allowlist = vec![BASE.to_owned()];
    // Only templates the configuration accepts are served.
    if !teamgate::config::url_allowed(&template, &allowlist) {
        return;
    }
    let Ok(tool) = teamgate::fuzzing::http_tool(&template, &allowlist) else {
        return;
    };
    let mut arguments = Map::new();
    for (name, arg) in [("a", input.a), ("b", input.b), ("c", input.c)] {
        let value = match arg {
            Some(Arg::Text(text)) => Value::String(text),
            Some(Arg::Number(n)) => Value::from(n),
            Some(Arg::Null) => Value::Null,
            None => continue,
        };
        arguments.insert(name.to_owned(), value);
    }
    let Ok(url) = teamgate::fuzzing::http_tool_url(&tool, &arguments) else {
        return;
    };
    assert!(!parser_sees_dot_segment(&url), "{url:?} has a dot segment");
    let parsed = url::Url::parse(&url).expect("a rendered URL parses");
    assert_eq!(parsed.scheme(), "https", "{url:?}");
    assert_eq!(parsed.host_str(), Some("api.example.com"), "{url:?}");
    assert_eq!(parsed.port_or_known_default(), Some(443), "{url:?}");
    assert!(
        teamgate::config::rendered_url_allowed(&url, &allowlist),
        "{url:?} is outside {BASE}"
    );
});
