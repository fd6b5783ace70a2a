//! Module-boundary and size rules, checked like tests (rust-analyzer's tidy).

use std::path::Path;

use crate::helpers::repo_path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn rmcp_is_imported_only_by_the_mcp_module() {
    let mut files = Vec::new();
    rust_files(&repo_path("src"), &mut files);
    let mcp = repo_path("src/mcp");
    let offenders: Vec<_> = files
        .iter()
        .filter(|f| !f.starts_with(&mcp))
        .filter(|f| std::fs::read_to_string(f).unwrap().contains("rmcp::"))
        .collect();
    assert!(
        offenders.is_empty(),
        "import MCP types from crate::mcp instead: {offenders:?}"
    );
}

#[test]
fn no_source_file_is_too_long() {
    let mut files = Vec::new();
    rust_files(&repo_path("src"), &mut files);
    rust_files(&repo_path("tests"), &mut files);
    for file in files {
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        assert!(
            lines <= 600,
            "{} has {lines} lines; split it past ~600",
            file.display()
        );
    }
}
