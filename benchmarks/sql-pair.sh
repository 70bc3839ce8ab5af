#!/usr/bin/env bash
# Two versions of the executor's SQL, compared where a shared machine's noise cannot tell them apart
# run by run: pgbench runs both scripts in the same run, each transaction drawn from either at
# random (-f a@1 -f b@1), so both see the machine at the same moments. Prints each round's mean
# latency per script and the median of the rounds' ratios b/a.
#
# Usage: benchmarks/sql-pair.sh a.sql b.sql [clients] [rounds] [seconds-per-round]
#   e.g. benchmarks/sql-pair.sh <(git show HEAD~1:benchmarks/src/main/resources/pgbench/executor.sql) \
#                               benchmarks/src/main/resources/pgbench/executor.sql 8 5 12
# Scripts name the schema as <schema>, like benchmarks/src/main/resources/pgbench/*.sql. The schema is
# a scratch one, migrated by outbox-relay.jar (build it first: mvn -B -ntp -q package -DskipTests)
# and dropped at the end. Connection from PG* variables, default 127.0.0.1, user postgres, db test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
a=$1
b=$2
clients=${3:-1}
rounds=${4:-5}
secs=${5:-12}
export PGHOST=${PGHOST:-127.0.0.1} PGUSER=${PGUSER:-postgres} PGDATABASE=${PGDATABASE:-test}
jar=$here/../outbox-relay-app/target/outbox-relay.jar
[ -f "$jar" ] || { echo "sql-pair: $jar is missing; run mvn -B -ntp -q package -DskipTests" >&2; exit 2; }
schema=sql_pair_$$
work=$(mktemp -d)
cleanup() {
  psql -q -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
java -jar "$jar" migrate --schema="$schema" \
  --jdbc-url="jdbc:postgresql://$PGHOST:${PGPORT:-5432}/$PGDATABASE?user=$PGUSER" >/dev/null
sed "s/<schema>/$schema/g" "$here/src/main/resources/pgbench/schema.sql" | psql -q -v ON_ERROR_STOP=1 >/dev/null
sed "s/<schema>/$schema/g" "$a" > "$work/a.sql"
sed "s/<schema>/$schema/g" "$b" > "$work/b.sql"
# The values PaymentCalls.pgbenchVariables binds for executor.sql, from the executor's default configuration.
vars=(-D tenant=t1 -D waitbudget=5000ms -D retention=86400 -D lockspace=501418764 -D topic=payments
      -D 'payload={"amount":1}' -D 'headers={}' -D resulttype=java.lang.Long)
threads=$(( clients < 2 ? 1 : 2 ))
ratios=()
for round in $(seq 1 "$rounds"); do
  out=$(pgbench -n -M prepared -c "$clients" -j "$threads" -T "$secs" -f "$work/a.sql@1" -f "$work/b.sql@1" "${vars[@]}" 2>&1) \
    || { echo "$out" >&2; exit 1; }
  # pgbench prints, per script, "SQL script N: file" and then its " - latency average = X ms".
  read -r la lb < <(awk '/^SQL script/ {n++} n > 0 && /latency average/ {print $(NF-1)}' <<<"$out" | paste -sd' ')
  ratio=$(awk -v a="$la" -v b="$lb" 'BEGIN {printf "%.3f", b / a}')
  ratios+=("$ratio")
  printf 'round=%s clients=%s a=%s ms b=%s ms b/a=%s\n' "$round" "$clients" "$la" "$lb" "$ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{r[NR] = $1} END {printf "median b/a latency over %d rounds: %s\n", NR, (NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2)}'
