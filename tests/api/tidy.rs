//! The code map's rules, checked like tests (rust-analyzer's tidy): every
//! "never touches" of ARCHITECTURE.md's code map as a check on what each
//! top-level module names of the crate and of its dependencies, no import
//! cycle between top-level modules nor between the files of one module
//! folder (`folders.rs`), no source file over 400 lines.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use crate::helpers::repo_path;

mod errors;
mod folders;
mod transport;

/// The code map's "never touches" (ARCHITECTURE.md), module by module: the
/// crate's own modules it must not name. Only backticked names of real
/// top-level modules count ("any logic" is prose); a cell "every teamgate
/// module but `x`" or "every other teamgate module" means all the others.
fn never_touches() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(repo_path("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let modules = top_level_modules();
    let mut never = BTreeMap::new();
    let mut in_table = false;
    for line in text.lines() {
        let cells = table_cells(line);
        if !in_table {
            in_table = cells.first().is_some_and(|c| c == "module")
                && cells.last().is_some_and(|c| c == "never touches");
            continue;
        }
        if cells.is_empty() {
            break;
        }
        if cells[0].starts_with("---") {
            continue;
        }
        let module = module_name(&cells[0]);
        let cell = cells.last().expect("a row has cells");
        let named: BTreeSet<String> = backticked(cell)
            .into_iter()
            .map(|name| module_name(&name))
            .filter(|name| modules.contains(name))
            .collect();
        let touches_none = if cell.starts_with("every") {
            let mut others = modules.clone();
            others.remove(&module);
            &others - &named
        } else {
            named
        };
        never.insert(module, touches_none);
    }
    never
}

/// The crate's top-level modules: src/'s folders and files but the roots.
fn top_level_modules() -> BTreeSet<String> {
    std::fs::read_dir(repo_path("src"))
        .unwrap()
        .flatten()
        .map(|entry| module_name(&entry.file_name().to_string_lossy()))
        .filter(|name| name != "lib" && name != "main")
        .collect()
}

/// `mcp/`, `audit.rs` and `mcp` all name the module `mcp`.
fn module_name(cell: &str) -> String {
    let name = cell.trim().trim_matches('`').trim_end_matches('/');
    name.trim_end_matches(".rs").to_owned()
}

/// A Markdown table row's cells, split at `|` but not at `\|`; none for
/// any other line.
fn table_cells(line: &str) -> Vec<String> {
    let Some(row) = line.trim().strip_prefix('|') else {
        return Vec::new();
    };
    let mut cells = vec![String::new()];
    let mut escaped = false;
    for c in row.chars() {
        match c {
            '|' if !escaped => cells.push(String::new()),
            c => cells.last_mut().expect("one cell").push(c),
        }
        escaped = c == '\\';
    }
    cells.pop(); // what follows the closing `|`
    cells.iter().map(|cell| cell.trim().to_owned()).collect()
}

/// The text between each pair of backticks.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// Modules that may name only the listed modules of the crate.
const MAY_ONLY: &[(&str, &[&str])] = &[("protocol", &["config"]), ("config", &[])];

/// Dependencies only some modules may use: (crate, the modules that may).
const ONLY: &[(&str, &[&str])] = &[
    ("rmcp", &["mcp", "protocol", "upstream"]),
    // The store for teamgate's own data; providers/sql/ for the team's databases.
    ("sqlx", &["store", "providers"]),
    ("openidconnect", &["portal", "outbound"]),
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
    let never_touches = never_touches();
    let mut offences = Vec::new();
    for source in &sources {
        let named = names_after(&source.text, "crate::");
        if let Some(never) = never_touches.get(&source.module) {
            for module in never.iter().filter(|m| named.contains(*m)) {
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
        "ARCHITECTURE.md code map broken:\n{}",
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
fn the_code_map_is_read_from_architecture_md() {
    let never = never_touches();
    assert!(never.len() >= 10, "the code map table was found: {never:?}");
    assert!(never["mcp"].contains("http"), "{:?}", never["mcp"]);
    assert!(never["http"].contains("upstream"), "{:?}", never["http"]);
    // Prose names no module; "every teamgate module but `config`" is the rest.
    assert!(never["main"].is_empty() && never["gate"].is_empty());
    assert!(never["protocol"].contains("store") && !never["protocol"].contains("config"));
    assert!(never["config"].contains("protocol") && !never["config"].contains("config"));
    assert_eq!(
        table_cells(r"| `a` | x \| y | `b`, `c` |"),
        ["`a`", r"x \| y", "`b`, `c`"]
    );
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
