//! The README test command reports every stage (issue 51 item 12): a failed
//! stage does not stop the ones after it, the summary names each result, and
//! the exit status is still non-zero so CI stays honest.

use std::process::Command;

use crate::helpers::repo_path;

fn run_stages(body: &str) -> (bool, String) {
    let script =
        format!("set -uo pipefail\nsource scripts/lib/stages.sh\n{body}\nstages_summary\n");
    let output = Command::new("bash")
        .args(["-c", &script])
        .current_dir(repo_path(""))
        .output()
        .expect("bash runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn a_failed_stage_does_not_stop_the_rest_and_the_command_still_fails() {
    let (ok, printed) = run_stages(
        "stage first true\n\
         stage second bash -c 'echo inside-second; exit 3'\n\
         stage third bash -c 'echo inside-third'",
    );
    assert!(!ok, "a failed stage makes the command fail: {printed}");
    assert!(
        printed.contains("inside-third"),
        "the third stage ran: {printed}"
    );
    let summary = printed.split("=== summary").nth(1).expect("a summary");
    assert!(
        summary.contains("passed") && summary.contains("first"),
        "{summary}"
    );
    assert!(
        summary.contains("FAILED") && summary.contains("second (exit 3)"),
        "{summary}"
    );
    assert!(summary.contains("1 of 3 stages FAILED"), "{summary}");

    let (ok, printed) = run_stages("stage only true");
    assert!(ok, "{printed}");
    assert!(printed.contains("all 1 stages passed"), "{printed}");
}

#[test]
fn the_readme_test_command_runs_each_stage_through_the_runner() {
    let script = std::fs::read_to_string(repo_path("scripts/test")).unwrap();
    assert!(script.contains("source scripts/lib/stages.sh"));
    assert!(
        !script.contains("set -e"),
        "errexit would stop at the first failure"
    );
    let outside: Vec<&str> = (script.lines())
        .filter(|line| line.starts_with("cargo ") || line.starts_with("scripts/"))
        .collect();
    assert!(
        outside.is_empty(),
        "{outside:?} run outside a stage: a failure would stop the command"
    );
    assert!(script.trim_end().ends_with("stages_summary"));
}
