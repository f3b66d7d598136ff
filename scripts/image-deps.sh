#!/usr/bin/env bash
# For each service image, what deploy/Dockerfile does to the committed tree, without Docker: the build stage
# (`npm ci` of the service and the root, then `tsc -b`) and the deps stage (`npm ci --omit=dev`), each in its
# own clean copy. Then it checks that chDB, which belongs to embedded mode only, is in neither part the
# runtime stage copies, and that the assembled runtime loads every module of the service: with no settings,
# its main must stop at the configuration check, not at a missing module. The plover CLI every image carries must
# load too.
# The copies come from `git archive HEAD`: commit first, uncommitted changes are not checked.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVICES=(capture ingestion decide management)
# What the Dockerfile's source stage copies.
SOURCE=(package.json package-lock.json tsconfig.base.json tsconfig.build-base.json packages services apps)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Every service is checked; the failures are listed together at the end.
failures=()
fail() {
  failures+=("$*")
}

source_copy() {
  mkdir -p "$1"
  git archive HEAD "${SOURCE[@]}" | tar -x -C "$1"
}

for S in "${SERVICES[@]}"; do
  echo "-- $S"
  build="$work/$S/build"
  deps="$work/$S/deps"
  source_copy "$build"
  source_copy "$deps"

  if ! (cd "$build" \
    && npm ci --no-audit --no-fund --workspace "services/$S" --workspace services/cli $([ "$S" != management ] || echo --workspace apps/console) --include-workspace-root \
    && npx tsc -b "services/$S/tsconfig.build.json" services/cli/tsconfig.build.json \
    && { [ "$S" != management ] || { node services/management/dist/replay-player/build.js && node services/management/dist/console/build.js; }; }); then
    fail "the build stage of $S failed"
    continue
  fi
  if ! (cd "$deps" && npm ci --no-audit --no-fund --omit=dev --workspace "services/$S" --workspace services/cli); then
    fail "the deps stage of $S failed"
    continue
  fi

  # The runtime stage takes node_modules from the deps stage and packages/ and services/ (with any
  # node_modules nested in them) from the build stage.
  chdb=$(find "$deps/node_modules" "$build/packages" "$build/services" -path '*/node_modules/*' \
    \( -name chdb -o -name '@chdb' \) -prune -print | sed "s|^$work/||")
  [ -z "$chdb" ] || fail "chDB would enter the $S image: ${chdb//$'\n'/, }"

  runtime="$work/$S/runtime"
  mkdir -p "$runtime"
  cp -a "$deps/package.json" "$deps/node_modules" "$build/packages" "$build/services" "$runtime/"
  [ "$S" != management ] || [ -s "$runtime/services/management/dist/replay-player/assets/player.js" ] \
    || fail "the management runtime has no replay player bundle"
  [ "$S" != management ] || [ -s "$runtime/services/management/dist/console/app/index.html" ] \
    || fail "the management runtime has no web console"
  # The console's bundler and libraries are build-time only: no runtime image installs them.
  bundled=$(find "$deps/node_modules" -maxdepth 2 \( -name vite -o -name rolldown -o -name uplot -o -path '*/@plover/console' \) -print | sed "s|^$work/||")
  [ -z "$bundled" ] || fail "the console's build dependencies would enter the $S image: ${bundled//$'\n'/, }"
  status=0
  output=$(cd "$runtime" && env -i PATH="$PATH" NODE_ENV=production node "services/$S/dist/main.js" 2>&1) || status=$?
  [ "$status" -eq 1 ] && [[ "$output" == "Invalid configuration: "* ]] \
    || fail "the $S runtime did not load (exit $status): $output"
  # The plover CLI loads, and its embedded-only commands say there is no embedded Plover here.
  status=0
  output=$(cd "$runtime" && env -i PATH="$PATH" node services/cli/dist/cli.js start 2>&1) || status=$?
  [ "$status" -eq 1 ] && [[ "$output" == "plover: embedded Plover (services/standalone with chDB) is not installed here"* ]] \
    || fail "the plover CLI in the $S runtime did not load (exit $status): $output"
done
if [ ${#failures[@]} -gt 0 ]; then
  printf 'image-deps: %s\n' "${failures[@]}" >&2
  exit 1
fi
echo "image-deps: every service installs, builds and loads as in deploy/Dockerfile, without chDB"
