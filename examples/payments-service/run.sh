#!/usr/bin/env bash
# Builds the example (and the library modules it needs) and starts it on port 8080 against the local
# PostgreSQL (127.0.0.1:5432, user postgres, database test) and RabbitMQ (127.0.0.1:5672).
# On Spring Boot 4.1 by default; BOOT_PROFILE=boot3 builds it on Spring Boot 3.5.
set -euo pipefail
cd "$(dirname "$0")/../.."
mvn -B -ntp -q -pl examples/payments-service -am package -DskipTests -P"${BOOT_PROFILE:-boot4}"
exec java -jar examples/payments-service/target/payments-service.jar "$@"
