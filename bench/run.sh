#!/usr/bin/env bash
# Runs every benchmark (or the ones named: `npm run bench -- bus`) and prints one JSON line each.
# Numbers go into BENCHMARKS.md by hand, with the date and machine, so regressions are visible in review.
set -euo pipefail
cd "$(dirname "$0")/.."
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(bus chdb-insert capture decide insights console-bundle console-tti replay)
for name in "${names[@]}"; do
  echo "== bench/${name}.ts" >&2
  flags=()
  # Its consumer runs in the bench's own process: with the heap settings `npm start` gives Plover.
  if [ "$name" = ingestion ] || [ "$name" = definitions ]; then mapfile -t flags < <(node -p "require('./services/standalone/node-flags.json').join('\\n')"); fi
  node "${flags[@]}" --conditions=plover-source --import tsx "bench/${name}.ts"
done
