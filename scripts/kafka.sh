#!/usr/bin/env bash
# A single-node Kafka broker (KRaft, no ZooKeeper) on 127.0.0.1 for development and CI.
#
#   scripts/kafka.sh start    fetch Kafka from Maven Central (once), format storage (once), start, wait until ready
#   scripts/kafka.sh stop     SIGTERM, then SIGKILL if it has not exited within KAFKA_STOP_TIMEOUT
#   scripts/kafka.sh status   exit 0 when a broker answers on 127.0.0.1:KAFKA_PORT
#
# Environment (defaults in brackets):
#   KAFKA_VERSION [3.9.1]   org.apache.kafka:kafka_2.13 version. 3.9 is the newest line that still speaks the
#                           old protocol versions kafkajs 2.2.4 uses (Kafka 4.0 removed them, KIP-896).
#   PLOVER_CACHE_DIR [<repo>/.cache]   jars, a private Maven repository and the default data dir live here.
#   KAFKA_DATA_DIR [<cache>/kafka-<version>/data]   configuration, log dirs, pid file and logs of the broker.
#   KAFKA_PORT [9092], KAFKA_CONTROLLER_PORT [9093]
#   KAFKA_READY_TIMEOUT [120]  seconds `start` waits for the broker; KAFKA_STOP_TIMEOUT [60] for `stop`.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=${KAFKA_VERSION:-3.9.1}
cache=${PLOVER_CACHE_DIR:-$repo/.cache}
home=$cache/kafka-$version
libs=$home/libs
data=${KAFKA_DATA_DIR:-$home/data}
port=${KAFKA_PORT:-9092}
controller_port=${KAFKA_CONTROLLER_PORT:-9093}
ready_timeout=${KAFKA_READY_TIMEOUT:-120}
stop_timeout=${KAFKA_STOP_TIMEOUT:-60}
pid_file=$data/kafka.pid
log_dir=$data/logs
# Both the storage tool and the broker run from the resolved jars with a small heap: this is a dev broker.
java_cmd=(java -Xmx512m -Xms256m -Djava.awt.headless=true "-Dlog4j.configuration=file:$data/log4j.properties" -cp "$libs/*")
# A fixed cluster id (base64url of the 16 bytes "plover-kafka-dev") saves a JVM start for `random-uuid`;
# it only has to be stable for one data dir.
cluster_id=cGxvdmVyLWthZmthLWRldg

die() {
  echo "kafka.sh: $*" >&2
  exit 1
}

say() {
  echo "kafka.sh: $*"
}

# CI machines are recreated from an image that may lack a JDK or Maven; as root we can fix that ourselves.
require_java() {
  local missing=()
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  ((${#missing[@]} == 0)) && return
  if [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null; then
    say "installing default-jdk-headless and maven (missing: ${missing[*]})"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless maven >/dev/null
  else
    die "missing ${missing[*]}: install a JDK (17+) and Maven, e.g. apt-get install -y default-jdk-headless maven"
  fi
}

resolve() {
  [[ -f $libs/.complete ]] && return
  require_java java mvn
  say "resolving org.apache.kafka:kafka_2.13:$version from Maven Central into $libs"
  local partial=$libs.partial
  rm -rf "$partial"
  # A private local repository keeps the cache self-contained (deleting it is a clean slate) and leaves
  # the user's ~/.m2 alone.
  mkdir -p "$home"
  if ! mvn -B -f "$repo/scripts/kafka/pom.xml" \
    -Dmaven.repo.local="$cache/maven-repository" \
    -Dkafka.version="$version" \
    -DincludeScope=runtime \
    -DoutputDirectory="$partial" \
    dependency:copy-dependencies >"$home/maven.log" 2>&1; then
    tail -n 40 "$home/maven.log" >&2
    die "resolving Kafka $version failed, full output in $home/maven.log"
  fi
  [[ -f $partial/kafka_2.13-$version.jar ]] || die "Maven did not produce kafka_2.13-$version.jar"
  touch "$partial/.complete"
  rm -rf "$libs"
  mv "$partial" "$libs"
}

write_config() {
  mkdir -p "$data/kraft-logs" "$log_dir"
  # Rewritten on every start so that the broker always runs the configuration in this script.
  cat >"$data/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$data/kraft-logs
# Sized for a 2-core machine rather than a production host.
num.network.threads=2
num.io.threads=4
num.partitions=4
auto.create.topics.enable=true
# One node: every internal topic has one replica. One offsets partition is created in a blink, whereas
# the default 50 make the first consumer group of a fresh broker wait.
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
# Tests start and stop consumer groups all the time; the default 3 s delay would slow every join.
group.initial.rebalance.delay.ms=0
# Test data is disposable: small segments and a day of retention keep the data dir small.
log.segment.bytes=16777216
log.retention.hours=24
log.retention.check.interval.ms=60000
EOF
  cat >"$data/log4j.properties" <<EOF
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=$log_dir/server.log
log4j.appender.file.MaxFileSize=10MB
log4j.appender.file.MaxBackupIndex=3
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
# Request and partition state-change chatter would bury the lines worth reading.
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
EOF
}

format_storage() {
  [[ -f $data/kraft-logs/meta.properties ]] && return
  say "formatting $data/kraft-logs (cluster id $cluster_id)"
  "${java_cmd[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$data/server.properties" >>"$log_dir/format.log" 2>&1 ||
    die "formatting storage failed, see $log_dir/format.log"
}

# The pid of the broker started from this data dir, if it is alive (a stale pid file may name a reused pid).
running_pid() {
  [[ -f $pid_file ]] || return 1
  local pid
  pid=$(<"$pid_file")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "kafka.Kafka $data/server.properties" || return 1
  echo "$pid"
}

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

# A metadata request and a group-coordinator lookup both succeed (see scripts/kafka/probe.mjs).
answers() {
  port_open && node "$repo/scripts/kafka/probe.mjs" "127.0.0.1:$port" >/dev/null 2>&1
}

wait_ready() {
  local pid=$1
  local deadline=$((SECONDS + ready_timeout))
  while ((SECONDS < deadline)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$log_dir/stdout.log" "$log_dir/server.log" >&2 2>/dev/null || true
      die "the broker exited during start-up; logs in $log_dir"
    fi
    answers && return
    sleep 1
  done
  die "the broker did not become ready within ${ready_timeout}s; logs in $log_dir"
}

start() {
  local pid
  if pid=$(running_pid); then
    say "already running (pid $pid) on 127.0.0.1:$port"
    wait_ready "$pid"
    return
  fi
  command -v node >/dev/null || die "node is required: the readiness probe uses the repository's kafkajs"
  if port_open; then
    # Typically a broker from another checkout or cache dir: usable, but not ours to manage.
    answers || die "127.0.0.1:$port is taken by something that is not a working Kafka broker"
    say "a broker not started from $data already answers on 127.0.0.1:$port; using it"
    return
  fi
  resolve
  require_java java
  write_config
  format_storage
  local started=$SECONDS
  # setsid detaches the broker from the caller's session and process group, so that it outlives the shell
  # (or CI step) that started it; the inner shell records its own pid before becoming the JVM.
  # shellcheck disable=SC2016 # $$, $1 and $@ belong to the inner shell.
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pid_file" \
    "${java_cmd[@]}" kafka.Kafka "$data/server.properties" </dev/null >>"$log_dir/stdout.log" 2>&1 &
  # The pid file appears as soon as the inner shell runs; wait for it rather than race it.
  local tries=0
  until [[ -s $pid_file ]] || ((++tries > 50)); do sleep 0.1; done
  pid=$(<"$pid_file")
  wait_ready "$pid"
  say "Kafka $version ready on 127.0.0.1:$port (pid $pid, $((SECONDS - started))s); logs in $log_dir/server.log"
}

stop() {
  local pid
  if ! pid=$(running_pid); then
    rm -f "$pid_file"
    say "not running (from $data)"
    return
  fi
  kill -TERM "$pid"
  local deadline=$((SECONDS + stop_timeout))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then
    say "no clean shutdown within ${stop_timeout}s, killing pid $pid"
    kill -KILL "$pid"
  fi
  rm -f "$pid_file"
  say "stopped (pid $pid)"
}

status() {
  local pid
  if pid=$(running_pid); then
    port_open || die "starting (pid $pid), not answering on 127.0.0.1:$port yet"
    say "running (pid $pid) on 127.0.0.1:$port; logs in $log_dir/server.log"
  elif answers; then
    say "a broker not started from $data answers on 127.0.0.1:$port"
  elif port_open; then
    die "127.0.0.1:$port is taken by something that is not a working Kafka broker"
  else
    die "not running"
  fi
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
