#!/usr/bin/env bash
# What one NOTIFY per transaction costs the executor's write path: pgbench runs the fused executor
# transaction from ../shared/bench/pgbench with and without `SELECT pg_notify(...)` before COMMIT,
# alternating in one run, and prints tps for each; compare medians as a ratio.
# Usage: benchmarks/notify-cost.sh [seconds-per-run] [rounds]; connection from PG* variables.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED_PGBENCH:-$here/../../shared/bench/pgbench}
secs=${1:-5}
rounds=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$shared/executor-fused.sql" "$work/plain.sql"
sed "s/^COMMIT;/SELECT pg_notify('outbox', '');\nCOMMIT;/" "$work/plain.sql" > "$work/notify.sql"
psql -q -v ON_ERROR_STOP=1 -f "$shared/schema.sql" >/dev/null 2>&1
for round in $(seq 1 "$rounds"); do
  for clients in 8 32; do
    for script in plain notify; do
      tps=$(pgbench -n -M prepared -c "$clients" -j 2 -T "$secs" -f "$work/$script.sql" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
      printf 'round=%s clients=%-3s %-7s tps=%s\n' "$round" "$clients" "$script" "${tps:-FAILED}"
    done
  done
done
