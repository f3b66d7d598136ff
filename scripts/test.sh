#!/usr/bin/env bash
# The test command (`npm test`): makes sure the real services exist and run (Debian's PostgreSQL and an
# Apache Kafka broker fetched from Maven Central), then runs every suite against them and against the
# embedded adapters. Extra arguments go to jest (e.g. `npm test -- packages/bus`).
set -euo pipefail
cd "$(dirname "$0")/.."

[ -d node_modules ] || npm install --no-audit --no-fund

bash scripts/postgres.sh start
bash scripts/kafka.sh start

export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
export TEST_KAFKA_BROKERS="${TEST_KAFKA_BROKERS:-127.0.0.1:9092}"
# test:unit sets the Node flag PGlite needs under jest (it loads built-ins with import()).
exec npm run test:unit -- "$@"
