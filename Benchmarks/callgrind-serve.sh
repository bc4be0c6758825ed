#!/usr/bin/env bash
# Runs `herald serve` under valgrind's callgrind, one profile per thread, and every other herald command as is: set
# it as HERALD_BENCH_BINARY of a benchmark to count the instructions each thread spends (the writer's per token, say),
# which on these noisy shared machines compares two builds where wall-clock rates cannot. Needs valgrind.
#   HERALD_CALLGRIND_BINARY   the herald to run (default: .build/release/herald of this checkout)
#   HERALD_CALLGRIND_OUT      the profiles' path prefix (default: /tmp/herald-callgrind); files PREFIX.PID-NN
# Example (the writer is the thread whose profile has the most instructions; divide by the tokens drained):
#   HERALD_BENCH_BINARY=Benchmarks/callgrind-serve.sh HERALD_BENCH_RUNS=1 HERALD_BENCH_MESSAGES=30 \
#     HERALD_BENCH_DURATION=200 Benchmarks/hms.sh
#   grep -h '^totals:' /tmp/herald-callgrind.*-* | sort -k2 -n | tail -1
set -euo pipefail
binary=${HERALD_CALLGRIND_BINARY:-$(cd "$(dirname "$0")/.." && pwd)/.build/release/herald}
if [[ ${1:-} == serve ]]; then
    exec valgrind --tool=callgrind --separate-threads=yes \
        --callgrind-out-file="${HERALD_CALLGRIND_OUT:-/tmp/herald-callgrind}.%p" "$binary" "$@"
fi
exec "$binary" "$@"
