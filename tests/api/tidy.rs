//! The code map's rules, checked like tests (rust-analyzer's tidy): every
//! "never touches" of README's Architecture table as a check on what each
//! top-level module names of the crate and of its dependencies, no import
//! cycle between top-level modules nor between the files of one module
//! folder (`folders.rs`), no source file over 400 lines.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use crate::helpers::repo_path;

mod folders;

/// README's "never touches", module by module: the crate's own modules it
/// must not name.
const NEVER: &[(&str, &[&str])] = &[
    (
        "protocol",
        &[
            "app",
            "http",
            "mcp",
            "registry",
            "providers",
            "store",
            "auth",
            "telemetry",
            "audit",
            "gate",
            "upstream",
        ],
    ),
    (
        "config",
        &[
            "app",
            "http",
            "mcp",
            "registry",
            "providers",
            "store",
            "auth",
            "telemetry",
            "audit",
            "gate",
            "protocol",
            "upstream",
        ],
    ),
    (
        "store",
        &[
            "app",
            "http",
            "mcp",
            "registry",
            "providers",
            "auth",
            "telemetry",
            "gate",
            "upstream",
        ],
    ),
    (
        "registry",
        &[
            "app",
            "http",
            "mcp",
            "providers",
            "store",
            "auth",
            "telemetry",
            "audit",
            "gate",
            "upstream",
        ],
    ),
    (
        "providers",
        &[
            "app",
            "http",
            "mcp",
            "store",
            "auth",
            "telemetry",
            "audit",
            "gate",
            "upstream",
        ],
    ),
    (
        "auth",
        &[
            "app",
            "http",
            "mcp",
            "providers",
            "telemetry",
            "gate",
            "upstream",
        ],
    ),
    (
        "telemetry",
        &[
            "app",
            "http",
            "mcp",
            "providers",
            "store",
            "auth",
            "audit",
            "gate",
            "upstream",
        ],
    ),
    (
        "mcp",
        &["app", "http", "providers", "auth", "gate", "upstream"],
    ),
    ("http", &["app", "providers", "upstream"]),
    (
        "portal",
        &[
            "app",
            "http",
            "mcp",
            "providers",
            "telemetry",
            "gate",
            "upstream",
        ],
    ),
    (
        "upstream",
        &[
            "app",
            "http",
            "mcp",
            "providers",
            "store",
            "auth",
            "telemetry",
            "audit",
            "gate",
        ],
    ),
    (
        "audit",
        &[
            "app",
            "http",
            "mcp",
            "registry",
            "providers",
            "auth",
            "telemetry",
            "gate",
            "upstream",
        ],
    ),
];

/// Modules that may name only the listed modules of the crate.
const MAY_ONLY: &[(&str, &[&str])] = &[("protocol", &["config"]), ("config", &[])];

/// Dependencies only some modules may use: (crate, the modules that may).
const ONLY: &[(&str, &[&str])] = &[
    ("rmcp", &["mcp", "protocol", "upstream"]),
    ("sqlx", &["store"]),
    ("openidconnect", &["portal"]),
    ("maud", &["portal"]),
];

/// The modules that never speak HTTP (no axum, hyper or tower).
const NO_HTTP: &[&str] = &["config", "registry", "providers", "store", "audit"];

struct Source {
    path: PathBuf,
    module: String,
    text: String,
}

fn sources() -> Vec<Source> {
    let root = repo_path("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(&root).unwrap();
            let first = relative.components().next().unwrap();
            let module = first
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned();
            let text = code_only(&std::fs::read_to_string(&path).unwrap());
            Source { path, module, text }
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text without comment lines (doc links name modules without using them).
fn code_only(text: &str) -> String {
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first path segment after each `prefix` (`crate::`, `rmcp::`), and
/// inside `crate::{a::x, b}` each item's first segment.
fn names_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => {
                        names.insert(identifier(&group[i..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.insert(identifier(rest));
        }
    }
    names.retain(|n| !n.is_empty() && n != "self");
    names
}

fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Each top-level module and the crate's modules it names.
fn module_graph(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in sources {
        let edges = graph.entry(source.module.clone()).or_default();
        for name in names_after(&source.text, "crate::") {
            if name != source.module {
                edges.insert(name);
            }
        }
    }
    graph
}

#[test]
fn no_module_names_what_the_code_map_says_it_never_touches() {
    let sources = sources();
    let mut offences = Vec::new();
    for source in &sources {
        let named = names_after(&source.text, "crate::");
        if let Some((_, never)) = NEVER.iter().find(|(m, _)| *m == source.module) {
            for module in never.iter().filter(|m| named.contains(**m)) {
                offences.push(format!("{} names crate::{module}", source.path.display()));
            }
        }
        if let Some((_, may)) = MAY_ONLY.iter().find(|(m, _)| *m == source.module) {
            for module in named.iter().filter(|m| !may.contains(&m.as_str())) {
                offences.push(format!("{} names crate::{module}", source.path.display()));
            }
        }
        let uses = |dependency: &str| {
            source.text.contains(&format!("{dependency}::"))
                && !names_after(&source.text, &format!("{dependency}::")).is_empty()
        };
        for (dependency, only) in ONLY {
            if !only.contains(&source.module.as_str()) && uses(dependency) {
                offences.push(format!("{} uses {dependency}", source.path.display()));
            }
        }
        if NO_HTTP.contains(&source.module.as_str()) {
            for dependency in ["axum", "hyper", "tower", "tower_http"] {
                if uses(dependency) {
                    offences.push(format!("{} uses {dependency}", source.path.display()));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "README code map broken:\n{}",
        offences.join("\n")
    );
}

/// A cycle of `graph`, as the path around it (`a -> b -> a`), if it has one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // Depth-first search from every node; a path back to a node on the
    // current path is a cycle.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if !done.insert(node.to_owned()) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    (graph.keys()).find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let graph = module_graph(&sources());
    if let Some(cycle) = cycle(&graph) {
        panic!("import cycle: {}", cycle.join(" -> "));
    }
    // The check itself: the graph it reads is the real one.
    assert!(graph["mcp"].contains("registry") && graph["registry"].contains("protocol"));
}

#[test]
fn the_scanner_reads_paths_and_groups() {
    let text = "use crate::{a::X, b, c::{d, e}};\nlet y = crate::f::g(); xcrate::h;";
    let names: Vec<_> = names_after(text, "crate::").into_iter().collect();
    assert_eq!(names, ["a", "b", "c", "f"]);
}

#[test]
fn no_source_file_is_over_400_lines() {
    let mut files = Vec::new();
    rust_files(&repo_path("src"), &mut files);
    rust_files(&repo_path("tests"), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(file).unwrap().lines().count();
            (lines > 400).then(|| format!("{} has {lines} lines", file.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these:\n{}", long.join("\n"));
}
