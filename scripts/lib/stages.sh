# Stages of a test command: each runs even when an earlier one failed, each result is
# reported as it ends and again in a summary, and the command exits non-zero when any failed
# (so CI stays honest while a red run still says everything that is wrong).
#   source scripts/lib/stages.sh
#   stage "cargo fmt --check" cargo fmt --check
#   stages_summary            # prints the table; returns 1 if any stage failed
STAGES_RESULTS=()
STAGES_FAILED=0

stage() {
  local name="$1"; shift
  local started=$SECONDS status=0
  echo "=== $name"
  # A subshell with errexit: a stage's own failure stops that stage, never the command.
  ( set -euo pipefail; "$@" ) || status=$?
  local took=$((SECONDS - started))
  if [[ $status -eq 0 ]]; then
    STAGES_RESULTS+=("passed  ${took}s  $name")
  else
    STAGES_RESULTS+=("FAILED  ${took}s  $name (exit $status)")
    STAGES_FAILED=$((STAGES_FAILED + 1))
  fi
  echo "=== $name: $([[ $status -eq 0 ]] && echo passed || echo "FAILED (exit $status)") in ${took}s"
}

stages_summary() {
  echo "=== summary"
  printf '%s\n' "${STAGES_RESULTS[@]}"
  if [[ $STAGES_FAILED -gt 0 ]]; then
    echo "=== $STAGES_FAILED of ${#STAGES_RESULTS[@]} stages FAILED"
    return 1
  fi
  echo "=== all ${#STAGES_RESULTS[@]} stages passed"
}
