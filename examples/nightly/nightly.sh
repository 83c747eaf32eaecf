#!/usr/bin/env bash
# Nightly vbench run with a regression check: the exit status says what happened.
#
#   0    ran, QoS passed, no significant regression against the baseline
#   1    a QoS criterion failed or a significant regression was found
#   2    the scenario, lab or command line is wrong (nothing was touched)
#   3    the lab failed: a guest unreachable, a tool missing, a trial failed
#   130  interrupted
#
# Everything is configurable through the environment (defaults in brackets):
#   VBENCH       the vbench command              [vbench on PATH, else ./.venv/bin/vbench]
#   SCENARIO     scenario file                   [examples/quickstart.yaml]
#   LAB          lab file                        [examples/labs/local.yaml]
#   BASELINE     auto | last | last:K | tag:NAME | RUN_ID   [the scenario's regression.baseline]
#   OUT          where the summary files go      [$VBENCH_HOME/nightly or ~/vbench-nightly]
#   VBENCH_STORE results store URL (e.g. a shared postgresql://…)        [SQLite default]
#   MAILTO       if set and `mail` exists, a Markdown summary is mailed on failure
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
VBENCH=${VBENCH:-$(command -v vbench || echo "$root/.venv/bin/vbench")}
SCENARIO=${SCENARIO:-$root/examples/quickstart.yaml}
LAB=${LAB:-$root/examples/labs/local.yaml}
BASELINE=${BASELINE:-}
OUT=${OUT:-${VBENCH_HOME:-$HOME/vbench-nightly}/nightly}
stamp=$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$OUT"

# --json: stdout is one JSON document (run id, figures, QoS, regression, exit code);
# progress and the summary table go to stderr, i.e. into the cron log.
"$VBENCH" run "$SCENARIO" --lab "$LAB" --tag nightly \
    --fail-on-qos "--check-regression=$BASELINE" --json > "$OUT/$stamp.json"
status=$?

run_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' \
         "$OUT/$stamp.json" 2>/dev/null || true)
if [ -n "$run_id" ]; then
    # JUnit for the CI server (one test case per QoS criterion and regression check),
    # Markdown for people.
    "$VBENCH" report "$run_id" --baseline "$BASELINE" -o "$OUT/$stamp.xml" >/dev/null
    "$VBENCH" report "$run_id" --baseline "$BASELINE" -o "$OUT/$stamp.md" >/dev/null
fi

case $status in
    0)   echo "nightly $stamp: ok (run $run_id)" ;;
    1)   echo "nightly $stamp: QoS failure or REGRESSION (run $run_id), see $OUT/$stamp.md" ;;
    2)   echo "nightly $stamp: configuration error, nothing ran" ;;
    3)   echo "nightly $stamp: lab or infrastructure error (run ${run_id:-none})" ;;
    130) echo "nightly $stamp: interrupted" ;;
    *)   echo "nightly $stamp: unexpected exit status $status" ;;
esac

if [ "$status" -ne 0 ] && [ -n "${MAILTO:-}" ] && command -v mail >/dev/null; then
    mail -s "vbench nightly $stamp: exit $status" "$MAILTO" < "${OUT}/$stamp.md"
fi
exit "$status"
