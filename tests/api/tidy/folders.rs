//! No import cycle between the files of one module folder (issue 61 part
//! 3): inside each folder under `src/`, its files (but `mod.rs`) and its
//! subfolders form a graph, a file pointing at another when it names
//! `super::other`, `crate::<folder>::other`, or an item `mod.rs`
//! re-exports from the other (`pub use other::Item`); that graph has no
//! cycle, so each folder reads bottom up.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
};

use super::{code_only, cycle, names_after};
use crate::helpers::repo_path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// One folder's graph: `files` are its nodes and their code (a subfolder's
/// is its `mod.rs`), `module` the code of the folder's own module file,
/// `path` the folder as a path from the crate root (`portal::oauth`).
fn folder_graph(path: &str, module: &str, files: &BTreeMap<String, String>) -> Graph {
    let reexported = reexports(module, files);
    let own = format!("crate::{path}::");
    let mut graph = Graph::new();
    for (node, text) in files {
        let mut names = names_after(text, "super::");
        names.extend(names_after(text, &own));
        let edges = names.iter().filter_map(|name| match files.get(name) {
            Some(_) => Some(name),
            None => reexported.get(name),
        });
        let edges = edges.filter(|target| *target != node).cloned().collect();
        graph.insert(node.clone(), edges);
    }
    graph
}

/// The items the module file re-exports from one of `files` (`pub use
/// child::{A, b::C}`, `pub(crate) use self::child::D`): each name in the
/// path or group, to the child it comes from.
fn reexports(module: &str, files: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut items = BTreeMap::new();
    for statement in module.split(';') {
        let words = statement.trim_start();
        let Some(rest) = words.strip_prefix("pub") else {
            continue;
        };
        // `pub(crate)`, `pub(super)`, `pub(in path)`.
        let rest = match rest.trim_start().strip_prefix('(') {
            Some(scoped) => scoped.split_once(')').map_or("", |(_, after)| after),
            None => rest,
        };
        let Some(path) = rest.trim_start().strip_prefix("use ") else {
            continue;
        };
        let path = path.trim_start();
        let path = path.strip_prefix("self::").unwrap_or(path);
        let Some((child, named)) = path.split_once("::") else {
            continue;
        };
        if !files.contains_key(child) {
            continue;
        }
        let words = named.split(|c: char| !(c.is_alphanumeric() || c == '_'));
        for word in words.filter(|w| !w.is_empty()) {
            items.insert(word.to_owned(), child.to_owned());
        }
    }
    items
}

/// Every folder under `src/`, by its path from the crate root, and its graph.
fn folder_graphs() -> BTreeMap<String, Graph> {
    let root = repo_path("src");
    let mut graphs = BTreeMap::new();
    let mut folders = vec![root.clone()];
    while let Some(folder) = folders.pop() {
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = if path.is_dir() {
                folders.push(path.clone());
                read(&path.join("mod.rs"))
            } else if path.extension().is_some_and(|e| e == "rs") && stem != "mod" {
                read(&path)
            } else {
                continue;
            };
            // A file `x.rs` beside its folder `x/` is the folder's node.
            let node: &mut String = files.entry(stem).or_default();
            node.push_str(&text);
        }
        if folder == root {
            continue;
        }
        let relative = folder.strip_prefix(&root).unwrap();
        let path = (relative.components())
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("::");
        // The folder's module file: its `mod.rs`, or `x.rs` beside `x/`.
        let mut module = read(&folder.join("mod.rs"));
        module.push_str(&read(&folder.with_extension("rs")));
        graphs.insert(path.clone(), folder_graph(&path, &module, &files));
    }
    graphs
}

/// A file's code without comment lines; nothing when there is no file.
fn read(path: &Path) -> String {
    std::fs::read_to_string(path)
        .map(|text| code_only(&text))
        .unwrap_or_default()
}

#[test]
fn no_import_cycle_between_files_inside_a_module_folder() {
    let graphs = folder_graphs();
    let cycles: Vec<String> = (graphs.iter())
        .filter_map(|(folder, graph)| {
            let cycle = cycle(graph)?;
            Some(format!("src/{folder}/: {}", cycle.join(" -> ")))
        })
        .collect();
    assert!(
        cycles.is_empty(),
        "import cycles between files of one folder (move what both need into the file that owns it):\n{}",
        cycles.join("\n")
    );
    // The check itself: the graphs it reads are the real ones.
    assert!(graphs["upstream"]["supervise"].contains("link"));
    assert!(graphs["portal"]["pages"].contains("error"), "a re-export");
}

#[test]
fn a_cycle_between_two_files_is_found_through_a_path_or_a_re_export() {
    let files = |a: &str, b: &str| {
        BTreeMap::from([
            ("a".to_owned(), a.to_owned()),
            ("b".to_owned(), b.to_owned()),
        ])
    };
    let down = files("use super::b::Thing;", "fn f() {}");
    assert_eq!(cycle(&folder_graph("demo", "", &down)), None);
    let around = files("use super::b::Thing;", "let x = crate::demo::a::make();");
    let found = cycle(&folder_graph("demo", "", &around)).expect("a cycle");
    assert_eq!(found, ["a", "b", "a"]);
    let module = "mod a;\nmod b;\npub(crate) use a::{Made, made as make};";
    let reexported = files("use super::b::Thing;", "use super::{Made, Other};");
    let found = cycle(&folder_graph("demo", module, &reexported)).expect("a cycle");
    assert_eq!(found, ["a", "b", "a"]);
}
