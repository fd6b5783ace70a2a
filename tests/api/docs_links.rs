//! The documentation a newcomer follows holds together (issue 63 item 8):
//! every relative link of README.md, ARCHITECTURE.md and docs/ reaches a file
//! (and a heading, for `#anchor`), every page of docs/ is reachable from
//! README, README stays short, every `teamgate` command shown names a real
//! subcommand, and every `scripts/` or `bench/` path named exists.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Component, Path},
    process::Command,
};

use crate::helpers::repo_path;

/// README.md, ARCHITECTURE.md and docs/*.md, by path relative to the repository.
fn pages() -> BTreeMap<String, String> {
    let mut names = vec!["README.md".to_owned(), "ARCHITECTURE.md".to_owned()];
    for entry in std::fs::read_dir(repo_path("docs"))
        .expect("docs/")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            names.push(format!("docs/{name}"));
        }
    }
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(repo_path(&name)).expect(&name);
            (name, text)
        })
        .collect()
}

/// The text outside fenced code blocks, and the lines of its `sh` blocks.
fn split_fences(text: &str) -> (String, Vec<String>) {
    let (mut prose, mut shell) = (String::new(), Vec::new());
    let mut fence: Option<bool> = None; // Some(is a shell block)
    for line in text.lines() {
        if let Some(info) = line.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(matches!(info.trim(), "sh" | "bash" | "shell")),
            };
            continue;
        }
        match fence {
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
            Some(true) => shell.push(line.to_owned()),
            Some(false) => {}
        }
    }
    (prose, shell)
}

/// The targets of inline links `[text](target)` outside code blocks.
fn links(text: &str) -> Vec<String> {
    let (prose, _) = split_fences(text);
    let mut found = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].split_whitespace().next().unwrap_or_default();
        found.push(target.to_owned());
    }
    found
}

/// A heading's anchor as GitHub makes it: lower case, punctuation but `-`
/// and `_` dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every heading's anchor in a Markdown text, repeats numbered `-1`, `-2`.
fn anchors(text: &str) -> BTreeSet<String> {
    let (prose, _) = split_fences(text);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for line in prose.lines() {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        let Some(title) = line[hashes..].strip_prefix(' ') else {
            continue;
        };
        if !(1..=6).contains(&hashes) {
            continue;
        }
        let base = slug(title);
        let count = seen.entry(base.clone()).or_default();
        anchors.insert(match *count {
            0 => base,
            n => format!("{base}-{n}"),
        });
        *count += 1;
    }
    anchors
}

/// `page`'s link `target` as a path relative to the repository (`..` resolved).
fn resolve(page: &str, target: &str) -> String {
    let dir = Path::new(page).parent().unwrap_or(Path::new(""));
    let mut parts: Vec<String> = Vec::new();
    for component in dir.join(target).components() {
        match component {
            Component::ParentDir => {
                parts.pop();
            }
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

fn is_relative(target: &str) -> bool {
    !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:")
}

#[test]
fn every_relative_link_reaches_a_file_and_its_heading() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for (page, text) in pages() {
        for target in links(&text).into_iter().filter(|t| is_relative(t)) {
            checked += 1;
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if file.is_empty() {
                page.clone()
            } else {
                resolve(&page, file)
            };
            let path = repo_path(&file);
            if !path.exists() {
                broken.push(format!("{page}: {target} (no {file})"));
            } else if !anchor.is_empty() {
                let target_text = std::fs::read_to_string(&path).unwrap_or_default();
                if !anchors(&target_text).contains(anchor) {
                    broken.push(format!("{page}: {target} (no heading #{anchor} in {file})"));
                }
            }
        }
    }
    assert!(checked >= 20, "the links were found ({checked})");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_docs_page_is_reachable_from_the_readme() {
    let mut reached = BTreeSet::from(["README.md".to_owned()]);
    let mut queue = vec!["README.md".to_owned()];
    while let Some(page) = queue.pop() {
        let Ok(text) = std::fs::read_to_string(repo_path(&page)) else {
            continue;
        };
        for target in links(&text).into_iter().filter(|t| is_relative(t)) {
            let file = target.split('#').next().unwrap_or_default();
            if file.ends_with(".md") && reached.insert(resolve(&page, file)) {
                queue.push(resolve(&page, file));
            }
        }
    }
    let pages = pages();
    let unreached: Vec<&String> = pages.keys().filter(|p| !reached.contains(*p)).collect();
    assert!(pages.len() >= 10, "{:?}", pages.keys());
    assert!(
        unreached.is_empty(),
        "not linked from README: {unreached:?}"
    );
}

#[test]
fn the_readme_is_at_most_400_lines() {
    let lines = std::fs::read_to_string(repo_path("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines: move reference to docs/"
    );
}

/// The subcommands `teamgate <path> --help` lists.
fn subcommands(path: &[&str]) -> BTreeSet<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_teamgate"))
        .args(path)
        .arg("--help")
        .output()
        .expect("the binary runs");
    let help = String::from_utf8_lossy(&output.stdout).into_owned();
    let Some((_, listed)) = help.split_once("Commands:\n") else {
        return BTreeSet::new();
    };
    listed
        .lines()
        .take_while(|line| !line.trim().is_empty())
        // A command's line is indented two spaces; its description's go on deeper.
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The words after `teamgate` (or `cargo run ... --`) in a command, options
/// and their values left out; empty when the command is something else.
fn teamgate_words(command: &str) -> Vec<String> {
    let mut words = command
        .split_whitespace()
        .skip_while(|w| w.contains('=') && w.chars().next().is_some_and(|c| c.is_uppercase()));
    let first = words.next().unwrap_or_default();
    let mut words: Vec<&str> = if first == "teamgate" || first.ends_with("/teamgate") {
        words.collect()
    } else if first == "cargo" {
        words.skip_while(|w| *w != "--").skip(1).collect()
    } else {
        return Vec::new();
    };
    if let Some(at) = words.iter().position(|w| *w == "--config") {
        words.drain(at..(at + 2).min(words.len()));
    }
    words
        .into_iter()
        .filter(|w| !w.starts_with('-'))
        .take(2)
        .map(str::to_owned)
        .collect()
}

/// Each command a page shows: a shell block's commands (split at `|`, `&&`
/// and `;`) and inline code that starts with `teamgate ` or `cargo run`.
fn commands(text: &str) -> Vec<String> {
    let (prose, shell) = split_fences(text);
    let mut found = Vec::new();
    for line in shell.join("\n").replace("\\\n", " ").lines() {
        let line = line.split(" #").next().unwrap_or_default();
        found.extend(
            line.split(['|', ';'])
                .flat_map(|c| c.split("&&"))
                .map(str::to_owned),
        );
    }
    let inline = prose.split('`').skip(1).step_by(2);
    found.extend(
        inline
            .filter(|code| code.starts_with("teamgate ") || code.starts_with("cargo run"))
            .map(str::to_owned),
    );
    found
}

#[test]
fn every_teamgate_command_shown_names_a_real_subcommand() {
    let top = subcommands(&[]);
    assert!(top.contains("serve") && top.contains("token"), "{top:?}");
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (page, text) in pages() {
        for command in commands(&text) {
            let words = teamgate_words(&command);
            // Placeholders (`<command>`, `NAME`) name no subcommand.
            let real = |w: &str| w.chars().all(|c| c.is_ascii_lowercase() || c == '-');
            let Some(sub) = words.first().filter(|w| real(w)) else {
                continue;
            };
            checked += 1;
            if !top.contains(sub) {
                wrong.push(format!("{page}: `{}`: no subcommand {sub}", command.trim()));
                continue;
            }
            let nested = subcommands(&[sub]);
            let Some(second) = words.get(1).filter(|_| !nested.is_empty()) else {
                continue;
            };
            // `token create/list/revoke` names three.
            for name in second.split('/').filter(|n| real(n) && !n.is_empty()) {
                if !nested.contains(name) {
                    wrong.push(format!("{page}: `{}`: no {sub} {name}", command.trim()));
                }
            }
        }
    }
    assert!(checked >= 10, "the commands were found ({checked})");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_scripts_and_bench_path_named_exists() {
    let mut missing = Vec::new();
    let mut checked = 0;
    for (page, text) in pages() {
        for prefix in ["scripts/", "bench/"] {
            for (at, _) in text.match_indices(prefix) {
                let before = text[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || "/._-".contains(c)) {
                    continue;
                }
                let path: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || "/._-".contains(*c))
                    .collect();
                let path = path.trim_end_matches(['.', ',']);
                checked += 1;
                if !repo_path(path).exists() {
                    missing.push(format!("{page}: {path}"));
                }
            }
        }
    }
    assert!(checked >= 10, "the paths were found ({checked})");
    assert!(missing.is_empty(), "no such path:\n{}", missing.join("\n"));
}

#[test]
fn anchors_follow_githubs_rules() {
    let text =
        "# A b\n## Toolsets: curated endpoints per role\n```sh\n# not a heading\n```\n## A b\n";
    let anchors: Vec<String> = anchors(text).into_iter().collect();
    assert_eq!(
        anchors,
        ["a-b", "a-b-1", "toolsets-curated-endpoints-per-role"]
    );
    assert_eq!(resolve("docs/a.md", "../README.md"), "README.md");
    assert_eq!(
        teamgate_words("X=1 target/release/teamgate --config f token create --user a"),
        ["token", "create"]
    );
    assert_eq!(teamgate_words("cargo run --release -- serve"), ["serve"]);
    assert!(teamgate_words("claude mcp add --transport http teamgate http://x").is_empty());
}
