#!/usr/bin/env bash
# Debian's PostgreSQL cluster on 127.0.0.1:5432, for development and CI.
#
#   scripts/postgres.sh start    start the cluster unless it already answers (installs postgresql as root if absent)
#   scripts/postgres.sh status   exit 0 when 127.0.0.1:5432 accepts connections
#
# Prints the URL the test suites take as TEST_DATABASE_URL. Environment: POSTGRES_READY_TIMEOUT [60] seconds.
set -euo pipefail

host=127.0.0.1
port=5432
url="postgres://postgres@$host:$port/postgres"
ready_timeout=${POSTGRES_READY_TIMEOUT:-60}

die() {
  echo "postgres.sh: $*" >&2
  exit 1
}

say() {
  echo "postgres.sh: $*"
}

ready() {
  pg_isready -q -h "$host" -p "$port"
}

newest_version() {
  find /etc/postgresql -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort -n | tail -n 1
}

install_if_missing() {
  command -v pg_ctlcluster >/dev/null && command -v pg_isready >/dev/null && return
  if [[ $EUID -ne 0 ]] || ! command -v apt-get >/dev/null; then
    die "PostgreSQL is not installed: apt-get install -y postgresql (as root)"
  fi
  say "installing postgresql with apt-get"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  # The URL above carries no password, as on the prepared machines: a cluster this script installed
  # trusts loopback connections (first matching line wins in pg_hba.conf). Existing clusters are left alone.
  local hba
  hba=/etc/postgresql/$(newest_version)/main/pg_hba.conf
  sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  # The package may have started the cluster already; make it read the new rules either way.
  pg_ctlcluster --skip-systemctl-redirect "$(newest_version)" main reload 2>/dev/null || true
}

start() {
  install_if_missing
  if ready; then
    say "ready at $url"
    return
  fi
  # Debian keeps one directory per installed major version; the newest one is the cluster to run.
  local version
  version=$(newest_version)
  [[ -n $version ]] || die "no cluster under /etc/postgresql (pg_createcluster <version> main)"
  say "starting cluster $version/main"
  # Without a systemd (containers, CI) pg_ctlcluster must not hand the start over to systemctl.
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  local deadline=$((SECONDS + ready_timeout))
  until ready; do
    ((SECONDS < deadline)) || die "not ready within ${ready_timeout}s; see /var/log/postgresql/postgresql-$version-main.log"
    sleep 0.5
  done
  say "ready at $url"
}

status() {
  ready || die "not answering on $host:$port"
  say "ready at $url"
}

case ${1:-} in
  start) start ;;
  status) status ;;
  *)
    echo "usage: $0 start|status" >&2
    exit 2
    ;;
esac
