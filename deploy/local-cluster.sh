#!/usr/bin/env bash
# A real three-node Apache Kafka cluster (KRaft, combined broker+controller, static voters) on 127.0.0.1.
#
#   deploy/local-cluster.sh up       start (or reuse) the cluster; the last stdout line is the bootstrap servers
#   deploy/local-cluster.sh down     stop the JVMs this script started (by pid); safe to run twice
#   deploy/local-cluster.sh status   say what runs
#
# Environment: CLUSTER_DIR (default .local-cluster/ at the repository root) holds data, logs and pids;
# KAFKA_BASE_PORT (default 39090) puts node N's broker on BASE+N and its controller on BASE+100+N;
# KAFKA_HEAP (default 320m); PYTHON (default the repository's .venv) runs the readiness check.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cluster_dir=${CLUSTER_DIR:-$root/.local-cluster}
base_port=${KAFKA_BASE_PORT:-39090}
heap=${KAFKA_HEAP:-320m}
python=${PYTHON:-$root/.venv/bin/python}
lib=$root/deploy/kafka/lib
nodes=(1 2 3)

broker_port() { echo $((base_port + $1)); }
controller_port() { echo $((base_port + 100 + $1)); }
bootstrap() { local n s=""; for n in "${nodes[@]}"; do s+="${s:+,}127.0.0.1:$(broker_port "$n")"; done; echo "$s"; }
pid_of() { cat "$cluster_dir/node$1/pid" 2>/dev/null || true; }
alive() { local p; p=$(pid_of "$1"); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
die() { echo "local-cluster: $*" >&2; exit 1; }

resolve_jars() {
  ls "$lib"/kafka_2.13-*.jar >/dev/null 2>&1 && return
  command -v mvn >/dev/null || die "mvn is needed to resolve the Kafka jars from Maven Central"
  echo "resolving Kafka jars from Maven Central into $lib" >&2
  mvn -q -B -f "$root/deploy/kafka/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$lib" -DincludeScope=runtime >&2
}

write_config() {
  local n=$1 dir=$cluster_dir/node$1 voters="" m
  for m in "${nodes[@]}"; do voters+="${voters:+,}$m@127.0.0.1:$(controller_port "$m")"; done
  mkdir -p "$dir/data"
  cat > "$dir/node.properties" <<EOF
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$(broker_port "$n"),CONTROLLER://127.0.0.1:$(controller_port "$n")
advertised.listeners=PLAINTEXT://127.0.0.1:$(broker_port "$n")
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=false
offsets.topic.num.partitions=3
offsets.topic.replication.factor=3
transaction.state.log.num.partitions=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=1
share.coordinator.state.topic.num.partitions=3
share.coordinator.state.topic.replication.factor=3
group.initial.rebalance.delay.ms=0
# The default 128 MiB dedupe buffer is allocated up front and does not fit a small heap.
log.cleaner.dedupe.buffer.size=4194304
log.cleaner.threads=1
num.io.threads=4
num.network.threads=2
num.replica.fetchers=1
background.threads=4
# Tests delete many topics; do not keep their files around.
log.segment.delete.delay.ms=1000
file.delete.delay.ms=1000
EOF
}

start_node() {
  local n=$1 dir=$cluster_dir/node$1
  if [ ! -f "$dir/data/meta.properties" ]; then
    java -cp "$lib/*" -Dlog4j2.configurationFile="$root/deploy/kafka/log4j2.properties" -Dkafka.logs.dir="$dir" \
      kafka.tools.StorageTool format -c "$dir/node.properties" --cluster-id="$(cat "$cluster_dir/cluster.id")" \
      >"$dir/format.log" 2>&1 || die "formatting node $n failed: see $dir/format.log"
  fi
  nohup java -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:TieredStopAtLevel=1 \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$root/deploy/kafka/log4j2.properties" \
    -Dkafka.logs.dir="$dir" -cp "$lib/*" kafka.Kafka "$dir/node.properties" \
    >"$dir/stdout.log" 2>&1 </dev/null &
  echo $! > "$dir/pid"
}

up() {
  resolve_jars
  [ -x "$python" ] || die "no python at $python (run 'make venv' or set PYTHON)"
  mkdir -p "$cluster_dir"
  [ -f "$cluster_dir/cluster.id" ] || "$python" -c \
    'import base64, uuid; print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))' \
    > "$cluster_dir/cluster.id"
  local n
  for n in "${nodes[@]}"; do
    if alive "$n"; then continue; fi
    write_config "$n"
    start_node "$n"
  done
  "$python" "$root/deploy/kafka/wait_ready.py" "$(bootstrap)" "${#nodes[@]}" 120 \
    || die "cluster did not become ready: see $cluster_dir/node*/server.log"
  bootstrap
}

down() {
  local n p pids=()
  for n in "${nodes[@]}"; do
    if alive "$n"; then p=$(pid_of "$n"); kill -TERM "$p" 2>/dev/null || true; pids+=("$p"); fi
  done
  # Controlled shutdown of the last voters can wait on a quorum that is already gone: bound it.
  local deadline=$((SECONDS + 15))
  for p in "${pids[@]}"; do
    while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    kill -KILL "$p" 2>/dev/null || true
  done
  for n in "${nodes[@]}"; do rm -f "$cluster_dir/node$n/pid"; done
  echo "stopped"
}

status() {
  local n
  for n in "${nodes[@]}"; do
    if alive "$n"; then echo "node $n: running (pid $(pid_of "$n"), 127.0.0.1:$(broker_port "$n"))"
    else echo "node $n: stopped"; fi
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
