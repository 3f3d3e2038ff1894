#!/usr/bin/env bash
# Tests/Mutations/run.sh — proves the liveness fuzzer by mutation (issue 33): puts one fixed bug
# back into a scratch clone of this repository, builds it and runs the fuzzer's random programs,
# which must fail. Prints how long that took. Usage, from the repository root:
#   bash Tests/Mutations/run.sh completion-order|in-order-bridge|promo-12-bit [seconds, default 60]
# The bugs (Tests/Mutations/put_back.py): the completion block run inside the body before the
# finish (item 1), the Foundation-queue bridge forwarding strictly in order (item 3), and the
# promotion counts as 12-bit fields that overflow into the next class (item 5).
set -u
mutation=${1:?usage: run.sh <mutation> [seconds]}
seconds=${2:-60}
root=$(git rev-parse --show-toplevel)
scratch=${MUTATION_SCRATCH:-/tmp/operations-mutation}
[ -d "$scratch/.git" ] || git clone -q "$root" "$scratch"
cd "$scratch"
git fetch -q "$root" HEAD && git checkout -q --force FETCH_HEAD
python3 "$root/Tests/Mutations/put_back.py" "$scratch" "$mutation" || exit 2
swift build --build-tests 2>&1 | grep -E "error|Build complete"
start=$(date +%s%N)
LIVENESS_FUZZ_SECONDS=$seconds timeout $((seconds + 120)) swift test --skip-build \
    --filter "OperationsBehaviourTests.LivenessFuzzTests/randomPrograms" > "$scratch/mutation.log" 2>&1
rc=$?
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
git checkout -q --force FETCH_HEAD
grep -E "summary|HUNG|misbehaved|Fatal error" "$scratch/mutation.log" | tail -3 | cut -c1-300
if [ "$rc" -eq 0 ]; then
    echo "mutation $mutation: NOT found in $seconds s"
    exit 1
fi
echo "mutation $mutation: found after $elapsed ms (the run's exit status $rc)"
