#!/bin/bash
# How long V4 (the insert-only outbox) takes to apply to a V3 outbox with a backlog, and how long a
# writer that arrives meanwhile waits for it. Builds a throwaway schema at V3 from this module's
# scripts, fills it, and applies V4 in one transaction with psql, as Flyway does.
#
#   db/scripts/v4-upgrade-time.sh [pending rows] [keys with a failed attempt] [published rows] [runs]
#
# MIGRATIONS=<dir> takes the scripts from elsewhere (e.g. another version of V4). Needs psql; PG* variables or the defaults below choose the server. Drops schema v4_upgrade_time.
set -euo pipefail
PENDING=${1:-100000}; FAILING=${2:-100}; PUBLISHED=${3:-0}; RUNS=${4:-5}
S=v4_upgrade_time
PSQL="psql -q -X -v ON_ERROR_STOP=1 -h ${PGHOST:-127.0.0.1} -U ${PGUSER:-postgres} ${PGDATABASE:-test}"
M=${MIGRATIONS:-$(cd "$(dirname "$0")/../src/main/resources/db/migration/idempotency" && pwd)}
ms() { echo $(( $(date +%s%N) / 1000000 )); }
for run in $(seq 1 "$RUNS"); do
    $PSQL -c "DROP SCHEMA IF EXISTS $S CASCADE" -c "CREATE SCHEMA $S" 2>/dev/null
    for v in V1 V2 V3; do sed "s/\${flyway:defaultSchema}/$S/g" "$M"/${v}__*.sql | $PSQL -1 -f - >/dev/null; done
    $PSQL -c "SET search_path TO $S" -c "
        INSERT INTO outbox_events (tenant_id, topic, partition_key, payload, status, published_at)
        SELECT 't1', 'payments', 'k' || (g % 10000), jsonb_build_object('amount', g, 'note', repeat('x', 100)), 'published', now()
        FROM generate_series(1, $PUBLISHED) g;
        INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)
        SELECT 't1', 'payments', 'k' || (g % 10000), jsonb_build_object('amount', g, 'note', repeat('x', 100))
        FROM generate_series(1, $PENDING) g;
        UPDATE outbox_events SET attempts = 2, last_error = 'HTTP 503', next_attempt_at = now() + interval '1 minute'
        WHERE id IN (SELECT min(id) FROM outbox_events WHERE status = 'pending' GROUP BY partition_key ORDER BY 1 LIMIT $FAILING)" \
        -c "VACUUM ANALYZE outbox_events"
    waited=$(mktemp)
    ( sleep 0.2; start=$(ms)
      $PSQL -c "INSERT INTO $S.outbox_events (tenant_id, topic, partition_key, payload) VALUES ('t1', 'payments', 'w', '{}')"
      echo $(( $(ms) - start )) > "$waited" ) &
    start=$(ms)
    sed "s/\${flyway:defaultSchema}/$S/g" "$M"/V4__*.sql | $PSQL -1 -c "SET search_path TO $S" -f - >/dev/null
    took=$(( $(ms) - start ))
    wait
    echo "run $run: V4 on $PENDING pending ($FAILING keys with a failed attempt), $PUBLISHED published: $took ms; a writer arriving 200 ms in waited $(cat "$waited") ms"
    rm -f "$waited"
done
$PSQL -c "DROP SCHEMA $S CASCADE" 2>/dev/null
