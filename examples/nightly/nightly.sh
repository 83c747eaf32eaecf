#!/usr/bin/env bash
# Nightly vbench run with a regression check: the exit status says what happened.
#
#   0    ran, QoS passed, no significant regression against the baseline
#   1    a QoS criterion failed or a significant regression was found
#   2    the scenario, lab or command line is wrong (nothing was touched)
#   3    the lab failed: a guest unreachable, a tool missing, a trial failed
#   75   the previous night's run still holds the lock: nothing was done
#   130  interrupted
#
# Everything is configurable through the environment (defaults in brackets):
#   VBENCH       the vbench command              [vbench on PATH, else ./.venv/bin/vbench]
#   SCENARIO     scenario file                   [examples/quickstart.yaml]
#   LAB          lab file                        [examples/labs/local.yaml]
#   BASELINE     auto | last | last:K | tag:NAME | RUN_ID   [the scenario's regression.baseline]
#   OUT          where the summary files go      [$VBENCH_HOME/nightly if VBENCH_HOME is set,
#                                                 else ~/vbench-nightly]
#   VBENCH_STORE results store URL               [unset: SQLite in vbench's results folder;
#                                                 e.g. postgresql://vbench@db1/vbench to
#                                                 share one store between labs]
#   LOCAL_LAB    auto | yes | no: start the lab's local sshd (`vbench lab up LAB`) when it
#                is not running, and stop it again at the end [auto: when LAB has `local:`]
#   MAIL_TO      mail the Markdown summary to these addresses (needs `mail`, e.g. the
#                bsd-mailx package; without it the script says so)           [unset: no mail]
#   MAIL_ON      failure | always: when to mail                              [failure]
#   LOCK         lock file against overlapping nights (flock)                [$OUT/.lock]
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
VBENCH=${VBENCH:-$(command -v vbench || echo "$root/.venv/bin/vbench")}
SCENARIO=${SCENARIO:-$root/examples/quickstart.yaml}
LAB=${LAB:-$root/examples/labs/local.yaml}
BASELINE=${BASELINE:-}
if [ -z "${OUT:-}" ]; then
    if [ -n "${VBENCH_HOME:-}" ]; then OUT=$VBENCH_HOME/nightly; else OUT=$HOME/vbench-nightly; fi
fi
LOCAL_LAB=${LOCAL_LAB:-auto}
MAIL_ON=${MAIL_ON:-failure}
LOCK=${LOCK:-$OUT/.lock}
stamp=$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$OUT"

# One night at a time: a run that is still going when the next night starts keeps the
# lock, and the new one leaves without touching the lab.
exec 9>"$LOCK"
if ! flock -n 9; then
    echo "nightly $stamp: the previous nightly still runs (lock $LOCK held): nothing done"
    exit 75
fi

# The local loopback lab (examples/labs/local.yaml) is an ordinary process: start it
# for the night if it is not running, and stop it again afterwards.
started_lab=no
if [ "$LOCAL_LAB" = yes ] || { [ "$LOCAL_LAB" = auto ] && grep -q '^local:' "$LAB" 2>/dev/null; }; then
    if ! "$VBENCH" lab status "$LAB" >/dev/null 2>&1; then
        if ! "$VBENCH" lab up "$LAB"; then
            echo "nightly $stamp: cannot start the local lab of $LAB"
            exit 3
        fi
        started_lab=yes
    fi
fi
stop_lab() {
    if [ "$started_lab" = yes ]; then
        "$VBENCH" lab down >/dev/null || echo "nightly $stamp: could not stop the local lab"
    fi
}
trap stop_lab EXIT

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
    0)   line="nightly $stamp: ok (run $run_id)" ;;
    1)   line="nightly $stamp: QoS failure or REGRESSION (run $run_id), see $OUT/$stamp.md" ;;
    2)   line="nightly $stamp: configuration error, nothing ran" ;;
    3)   line="nightly $stamp: lab or infrastructure error (run ${run_id:-none})" ;;
    130) line="nightly $stamp: interrupted" ;;
    *)   line="nightly $stamp: unexpected exit status $status" ;;
esac
echo "$line"

if [ -n "${MAIL_TO:-}" ] && { [ "$status" -ne 0 ] || [ "$MAIL_ON" = always ]; }; then
    if ! command -v mail >/dev/null; then
        echo "nightly $stamp: MAIL_TO is set but the mail command is not installed" \
             "(e.g. apt install bsd-mailx): nothing mailed"
    elif [ -f "$OUT/$stamp.md" ]; then
        mail -s "vbench nightly $stamp: exit $status" "$MAIL_TO" < "$OUT/$stamp.md"
    else  # nothing ran: the status line is the summary
        echo "$line" | mail -s "vbench nightly $stamp: exit $status" "$MAIL_TO"
    fi
fi
exit "$status"
