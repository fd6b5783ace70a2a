//! Typed seams (issue 61): a port's errors are a `thiserror` enum, not a
//! `String`. No file under `src/` returns `Result<_, String>` but those
//! listed here, each with why, so the count cannot creep back.

use super::{code_only, rust_files};
use crate::helpers::repo_path;

/// The files that may, and why.
const ALLOWED: &[(&str, &str)] = &[(
    "src/fuzzing.rs",
    "check_config's error is compared as check-config prints it by the config fuzz target",
)];

/// The `Result<…>` types in `text` whose error (second argument) is `String`.
fn string_errors(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("Result<") {
        let preceded = text[..at].chars().next_back();
        if preceded.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let inner = &text[at + "Result<".len()..];
        let (mut depth, mut args, mut start) = (0usize, Vec::new(), 0);
        for (i, c) in inner.char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                '>' if depth == 0 => {
                    args.push(inner[start..i].trim());
                    break;
                }
                '>' => depth -= 1,
                ',' if depth == 0 => {
                    args.push(inner[start..i].trim());
                    start = i + 1;
                }
                _ => {}
            }
        }
        if args.len() == 2 && matches!(args[1], "String" | "std::string::String") {
            found.push(format!("Result<{}, {}>", args[0], args[1]));
        }
    }
    found
}

#[test]
fn no_port_answers_a_string_error() {
    let mut files = Vec::new();
    rust_files(&repo_path("src"), &mut files);
    let root = repo_path("");
    let offences: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let relative = file.strip_prefix(&root).unwrap_or(file);
            let relative = relative.to_string_lossy().replace('\\', "/");
            let found = string_errors(&code_only(&std::fs::read_to_string(file).unwrap()));
            let allowed = ALLOWED.iter().any(|(path, _)| *path == relative);
            (!found.is_empty() && !allowed).then(|| format!("{relative}: {}", found.join(", ")))
        })
        .collect();
    assert!(
        offences.is_empty(),
        "a port's errors are a thiserror enum (or add the file to ALLOWED with why):\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_scanner_finds_string_errors_and_only_those() {
    let text = "fn a() -> Result<Vec<(u8, String)>, String> {}\n\
                fn b() -> anyhow::Result<HashMap<String, String>> {}\n\
                fn c() -> Result<String, MyError> {}\n\
                fn d() -> io::Result<String> {}\n\
                fn e() -> MyResult<u8, String> {}";
    assert_eq!(string_errors(text), ["Result<Vec<(u8, String)>, String>"]);
}

#[test]
fn every_allowed_file_exists_and_says_why() {
    for (path, why) in ALLOWED {
        assert!(repo_path(path).exists(), "{path} is allowed but gone");
        assert!(why.len() > 20, "{path}: say why");
    }
}
