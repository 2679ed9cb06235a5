#!/usr/bin/env bash
# A real three-node Apache Kafka cluster on 127.0.0.1: by default Kafka 4.1.1 in KRaft mode (combined
# broker+controller, static voters); any version Maven Central serves, in KRaft or ZooKeeper mode, on request.
#
#   deploy/local-cluster.sh up       start (or reuse) the cluster; the last stdout line is the bootstrap servers
#   deploy/local-cluster.sh down     stop the JVMs this script started (by pid); safe to run twice
#   deploy/local-cluster.sh status   say what runs
#
# Environment: CLUSTER_DIR (default .local-cluster/ at the repository root) holds data, logs and pids;
# KAFKA_BASE_PORT (default 39090) puts node N's broker on BASE+N and its controller on BASE+100+N;
# KAFKA_HEAP (default 320m); PYTHON (default the repository's .venv) runs the readiness check.
#
# KAFKA_VERSION (default 4.1.1, the version of deploy/kafka/pom.xml, whose jars `make jars` puts in
# deploy/kafka/lib) runs another Apache Kafka release: its broker jars are resolved from Maven Central
# (deploy/kafka/version-pom.xml) into deploy/kafka/lib/<version>/ on first use. KAFKA_MODE=kraft (default) or
# zookeeper: a ZooKeeper node (ZooKeeperServerMain from the same jars, heap ZOOKEEPER_HEAP, default 64m) on
# BASE+100 and three brokers registered in it (Kafka 2.x and 3.x only: 4.0 removed ZooKeeper mode). KRaft
# needs Kafka 3.3 or newer (production-ready there). A CLUSTER_DIR keeps the version and mode it was made
# with (CLUSTER_DIR/kafka-version); starting it as another is refused. E.g.
#   KAFKA_VERSION=3.6.2 KAFKA_MODE=zookeeper CLUSTER_DIR=/tmp/k362 KAFKA_BASE_PORT=31000 deploy/local-cluster.sh up
#
# SECURITY=sasl_ssl (default plaintext) secures the cluster: clients and brokers speak SASL_SSL with
# SCRAM-SHA-512, the controllers SASL_PLAINTEXT with PLAIN (KRaft controllers cannot use SCRAM);
# StandardAuthorizer, no ACLs (everything denied), super user `admin`. A CA and the brokers' certificate
# (SAN 127.0.0.1) are made on the spot in CLUSTER_DIR/tls. SCRAM users are created when the nodes are
# formatted: `admin` and SCRAM_USERS (default "reassign-monitor reassign-operator"), each with a random
# password that is written only to its client config CLUSTER_DIR/secrets/USER.properties (mode 600).
# A second listener, SSL on BASE+10+N, takes mutual TLS only (ssl.client.auth=required): a client
# certificate signed by CLUSTER_DIR/tls/ca.pem is the principal User:<its CN>. It is apart from the SASL_SSL
# listener so that SASL clients (and the brokers among themselves) need no client certificate.
#
# TIERED_STORAGE=1 (default off) enables remote storage (KIP-405, Kafka 3.6 or newer, plaintext only): Kafka's own
# LocalTieredStorage keeps remote segments in CLUSTER_DIR/remote-storage, shared by the brokers. It ships only in
# the kafka-storage test jar, resolved from Maven Central (deploy/kafka/tiered-storage-pom.xml) into
# deploy/kafka/lib[/<version>]/tiered-storage/ on first use. A topic uses it with remote.storage.enable=true.
# REPLICATION_LISTENER=1 (default 0; plaintext KRaft only) moves the brokers' traffic among themselves to a listener of
# its own, REPLICATION on BASE+20+N, so that the clients' port (BASE+N) can be cut off while Kafka still replicates and
# lists the broker alive (the fault tests drop packets to it inside a network namespace of their own).
# LOG_DIRS_PER_BROKER (default 1) gives each broker that many log dirs (JBOD): node N's are CLUSTER_DIR/nodeN/data,
# then data2, data3, ... A directory may be a mount point made beforehand (a small tmpfs for a disk that fills): in
# KRaft mode it must be mounted before the node is first formatted, which writes meta.properties into every log dir.
#
# OAUTH_JWKS_URL (with OAUTH_ISSUER, OAUTH_AUDIENCE and OAUTH_TOKEN_URL) also enables OAUTHBEARER on the SASL_SSL
# listener, validated by Kafka's own OAuthBearerValidatorCallbackHandler against that JWKS (a token's `sub` is the
# principal); OAUTH_REAUTH_MS (default 0: off) sets connections.max.reauth.ms for OAUTHBEARER sessions (KIP-368).
# The URLs are written into the nodes' configs: a CLUSTER_DIR made with other ones must be started afresh.
#
# KERBEROS_KEYTAB (with KERBEROS_PRINCIPAL and KERBEROS_KRB5_CONF) also enables GSSAPI on the SASL_SSL listener: the
# brokers log in as KERBEROS_PRINCIPAL (kafka/<the host clients ask for>@REALM: service name kafka) from that keytab,
# their JVM reading the realm's krb5.conf (-Djava.security.krb5.conf); a client principal primary@REALM is
# User:primary (the default sasl.kerberos.principal.to.local.rules). Written into the nodes' configs, like the URLs.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cluster_dir=${CLUSTER_DIR:-$root/.local-cluster}
base_port=${KAFKA_BASE_PORT:-39090}
heap=${KAFKA_HEAP:-320m}
python=${PYTHON:-$root/.venv/bin/python}
security=${SECURITY:-plaintext}
default_version=4.1.1  # deploy/kafka/pom.xml's
version=${KAFKA_VERSION:-$default_version}
mode=${KAFKA_MODE:-kraft}
zookeeper_heap=${ZOOKEEPER_HEAP:-64m}
log_dirs_per_broker=${LOG_DIRS_PER_BROKER:-1}
scram_users=${SCRAM_USERS:-reassign-monitor reassign-operator}
tiered_storage=${TIERED_STORAGE:-0}
replication_listener=${REPLICATION_LISTENER:-0}
tls_dir=$cluster_dir/tls
secrets_dir=$cluster_dir/secrets
lib=$root/deploy/kafka/lib
if [ "$version" != "$default_version" ]; then lib=$root/deploy/kafka/lib/$version; fi
tiered_lib=$lib/tiered-storage
nodes=(1 2 3)

broker_port() { echo $((base_port + $1)); }
controller_port() { echo $((base_port + 100 + $1)); }
mtls_port() { echo $((base_port + 10 + $1)); }
replication_port() { echo $((base_port + 20 + $1)); }
zookeeper_port() { echo $((base_port + 100)); }
zookeeper_mode() { [ "$mode" = zookeeper ]; }
# Node N's log dirs, comma-separated: data, data2, data3, ...
log_dirs() {
  local dir=$cluster_dir/node$1 i s=$cluster_dir/node$1/data
  for ((i = 2; i <= log_dirs_per_broker; i++)); do s+=",$dir/data$i"; done
  echo "$s"
}
bootstrap() { local n s=""; for n in "${nodes[@]}"; do s+="${s:+,}127.0.0.1:$(broker_port "$n")"; done; echo "$s"; }
pid_of() { cat "$cluster_dir/node$1/pid" 2>/dev/null || true; }
# A pid file outlives a JVM that died, and the kernel hands its pid to another process: a node (or ZooKeeper) is
# alive only when that pid still runs its own command line. Else `status` calls a dead cluster running, and `down`
# signals a stranger (seen: a node that failed to start, its pid reused; the next `up` kept its stale directory).
runs() { [ -n "$1" ] && ps -ww -p "$1" -o args= 2>/dev/null | grep -qF -- "$2"; }
alive() { runs "$(pid_of "$1")" "$cluster_dir/node$1/node.properties"; }
zookeeper_pid() { cat "$cluster_dir/zookeeper/pid" 2>/dev/null || true; }
zookeeper_alive() { runs "$(zookeeper_pid)" "$cluster_dir/zookeeper/data"; }
die() { echo "local-cluster: $*" >&2; exit 1; }
secured() { [ "$security" = sasl_ssl ]; }
tiered() { [ "$tiered_storage" = 1 ]; }
own_replication_listener() { [ "$replication_listener" = 1 ]; }
# The brokers' classpath: the broker's jars, and LocalTieredStorage's with TIERED_STORAGE=1.
classpath() { if tiered; then echo "$lib/*:$tiered_lib/*"; else echo "$lib/*"; fi; }
oauth_jwks_url=${OAUTH_JWKS_URL:-}
oauth_enabled() { secured && [ -n "$oauth_jwks_url" ]; }
kerberos_keytab=${KERBEROS_KEYTAB:-}
kerberos_enabled() { secured && [ -n "$kerberos_keytab" ]; }

resolve_jars() {
  ls "$lib"/kafka_2.13-*.jar >/dev/null 2>&1 && return
  command -v mvn >/dev/null || die "mvn is needed to resolve the Kafka jars from Maven Central"
  echo "resolving Kafka $version jars from Maven Central into $lib" >&2
  if [ "$version" = "$default_version" ]; then
    mvn -q -B -f "$root/deploy/kafka/pom.xml" dependency:copy-dependencies \
      -DoutputDirectory="$lib" -DincludeScope=runtime >&2
  else
    # Into a directory of its own first: an interrupted download must not look resolved (the test above).
    rm -rf "$lib.partial"
    mvn -q -B -f "$root/deploy/kafka/version-pom.xml" -Dkafka.version="$version" dependency:copy-dependencies \
      -DoutputDirectory="$lib.partial" -DincludeScope=runtime >&2 || die "Kafka $version: not resolved from Maven Central"
    mv "$lib.partial" "$lib"
  fi
}

resolve_tiered_storage_jar() {
  ls "$tiered_lib"/kafka-storage-*-test.jar >/dev/null 2>&1 && return
  echo "resolving Kafka $version's LocalTieredStorage (kafka-storage test jar) from Maven Central" >&2
  rm -rf "$tiered_lib.partial"
  mvn -q -B -f "$root/deploy/kafka/tiered-storage-pom.xml" -Dkafka.version="$version" dependency:copy-dependencies \
    -DoutputDirectory="$tiered_lib.partial" -DincludeScope=runtime >&2 \
    || die "TIERED_STORAGE=1: Kafka $version publishes no kafka-storage test jar (LocalTieredStorage) on Maven Central"
  mv "$tiered_lib.partial" "$tiered_lib"
}

# KAFKA_VERSION as a number: 3.6.2 -> 306.
major_minor() {
  local major minor
  IFS=. read -r major minor _ <<<"$version"
  [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ ]] || die "KAFKA_VERSION=$version: expected MAJOR.MINOR.PATCH"
  echo $((major * 100 + minor))
}

# The version and mode asked for must exist, and be those the CLUSTER_DIR was made with: its data is for no other.
check_version() {
  local made=$cluster_dir/kafka-version wanted="$version $mode" number
  number=$(major_minor)
  case "$mode" in
    kraft) [ "$number" -ge 303 ] || die "KAFKA_MODE=kraft needs Kafka 3.3 or newer (KAFKA_VERSION=$version)" ;;
    zookeeper) [ "$number" -lt 400 ] || die "KAFKA_MODE=zookeeper: Kafka $version has no ZooKeeper mode (removed in 4.0)"
               if secured; then die "SECURITY=sasl_ssl needs KAFKA_MODE=kraft"; fi ;;
    *) die "KAFKA_MODE=$mode: expected kraft or zookeeper" ;;
  esac
  case "$tiered_storage" in
    0) ;;
    1) [ "$number" -ge 306 ] || die "TIERED_STORAGE=1 needs Kafka 3.6 or newer (KAFKA_VERSION=$version)"
       if secured; then die "TIERED_STORAGE=1 needs SECURITY=plaintext"; fi ;;
    *) die "TIERED_STORAGE=$tiered_storage: expected 0 or 1" ;;
  esac
  case "$replication_listener" in
    0) ;;
    1) if secured || zookeeper_mode; then die "REPLICATION_LISTENER=1 needs SECURITY=plaintext and KAFKA_MODE=kraft"; fi ;;
    *) die "REPLICATION_LISTENER=$replication_listener: expected 0 or 1" ;;
  esac
  mkdir -p "$cluster_dir"
  if [ -f "$made" ]; then
    [ "$(cat "$made")" = "$wanted" ] || die "$cluster_dir holds a cluster of Kafka $(cat "$made"), not $wanted"
  else
    echo "$wanted" > "$made"
  fi
}

write_config() {
  local n=$1 dir=$cluster_dir/node$1 voters="" m dirs
  for m in "${nodes[@]}"; do voters+="${voters:+,}$m@127.0.0.1:$(controller_port "$m")"; done
  [[ "$log_dirs_per_broker" =~ ^[1-9][0-9]*$ ]] || die "LOG_DIRS_PER_BROKER=$log_dirs_per_broker: expected a number from 1"
  IFS=, read -r -a dirs <<<"$(log_dirs "$n")"
  mkdir -p "${dirs[@]}"
  { if zookeeper_mode; then zookeeper_broker "$n"
    else
      if secured; then secured_listeners "$n"; else plaintext_listeners "$n"; fi
      printf 'process.roles=broker,controller\nnode.id=%s\ncontroller.quorum.voters=%s\n' "$n" "$voters"
    fi
    cat <<EOF
log.dirs=$(log_dirs "$n")
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
    if tiered; then tiered_storage_config; fi
  } > "$dir/node.properties"
  if secured; then chmod 600 "$dir/node.properties"; fi  # it holds the admin password
}

# Remote storage in a directory all brokers share (any of them may lead a partition and read its remote
# segments); segments are copied and local logs trimmed within seconds, not minutes.
tiered_storage_config() {
  cat <<EOF
remote.log.storage.system.enable=true
remote.log.storage.manager.class.name=org.apache.kafka.server.log.remote.storage.LocalTieredStorage
remote.log.storage.manager.impl.prefix=rsm.config.
rsm.config.dir=$cluster_dir/remote-storage
remote.log.metadata.manager.listener.name=PLAINTEXT
rlmm.config.remote.log.metadata.topic.replication.factor=1
remote.log.manager.task.interval.ms=1000
log.retention.check.interval.ms=1000
EOF
}

zookeeper_broker() {
  cat <<EOF
broker.id=$1
zookeeper.connect=127.0.0.1:$(zookeeper_port)
listeners=PLAINTEXT://127.0.0.1:$(broker_port "$1")
advertised.listeners=PLAINTEXT://127.0.0.1:$(broker_port "$1")
EOF
}

plaintext_listeners() {
  if own_replication_listener; then
    cat <<EOF
listeners=PLAINTEXT://127.0.0.1:$(broker_port "$1"),REPLICATION://127.0.0.1:$(replication_port "$1"),CONTROLLER://127.0.0.1:$(controller_port "$1")
advertised.listeners=PLAINTEXT://127.0.0.1:$(broker_port "$1"),REPLICATION://127.0.0.1:$(replication_port "$1")
inter.broker.listener.name=REPLICATION
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT
EOF
  else
    cat <<EOF
listeners=PLAINTEXT://127.0.0.1:$(broker_port "$1"),CONTROLLER://127.0.0.1:$(controller_port "$1")
advertised.listeners=PLAINTEXT://127.0.0.1:$(broker_port "$1")
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
EOF
  fi
  echo controller.listener.names=CONTROLLER
}

secured_listeners() {
  local admin_password
  admin_password=$(password_of admin)
  cat <<EOF
listeners=SASL_SSL://127.0.0.1:$(broker_port "$1"),SSL://127.0.0.1:$(mtls_port "$1"),CONTROLLER://127.0.0.1:$(controller_port "$1")
advertised.listeners=SASL_SSL://127.0.0.1:$(broker_port "$1"),SSL://127.0.0.1:$(mtls_port "$1")
controller.listener.names=CONTROLLER
inter.broker.listener.name=SASL_SSL
listener.security.protocol.map=SASL_SSL:SASL_SSL,SSL:SSL,CONTROLLER:SASL_PLAINTEXT
listener.name.ssl.ssl.client.auth=required
ssl.principal.mapping.rules=RULE:^CN=([^,]+)$/\$1/,DEFAULT
sasl.enabled.mechanisms=SCRAM-SHA-512$(if oauth_enabled; then printf ',OAUTHBEARER'; fi)$(if kerberos_enabled; then printf ',GSSAPI'; fi)
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$admin_password";
listener.name.controller.sasl.enabled.mechanisms=PLAIN
sasl.mechanism.controller.protocol=PLAIN
listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="$admin_password" user_admin="$admin_password";
ssl.keystore.type=PEM
ssl.keystore.location=$tls_dir/broker.pem
ssl.truststore.type=PEM
ssl.truststore.location=$tls_dir/ca.pem
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
allow.everyone.if.no.acl.found=false
EOF
  if oauth_enabled; then oauth_listener; fi
  if kerberos_enabled; then kerberos_listener; fi
}

kerberos_listener() {
  cat <<EOF
listener.name.sasl_ssl.gssapi.sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="$kerberos_keytab" principal="${KERBEROS_PRINCIPAL:?KERBEROS_PRINCIPAL is needed with KERBEROS_KEYTAB}";
sasl.kerberos.service.name=${KERBEROS_PRINCIPAL%%/*}
EOF
}

oauth_listener() {
  cat <<EOF
listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;
listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms=${OAUTH_REAUTH_MS:-0}
sasl.oauthbearer.jwks.endpoint.url=$oauth_jwks_url
sasl.oauthbearer.expected.issuer=${OAUTH_ISSUER:?OAUTH_ISSUER is needed with OAUTH_JWKS_URL}
sasl.oauthbearer.expected.audience=${OAUTH_AUDIENCE:?OAUTH_AUDIENCE is needed with OAUTH_JWKS_URL}
EOF
}

# -- secured mode: certificates and credentials, made once per CLUSTER_DIR --

make_tls() {
  [ -f "$tls_dir/broker.pem" ] && return
  mkdir -p "$tls_dir"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=local-cluster CA" \
    -keyout "$tls_dir/ca.key" -out "$tls_dir/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$tls_dir/broker.key" -out "$tls_dir/broker.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$tls_dir/san.ext"
  openssl x509 -req -in "$tls_dir/broker.csr" -CA "$tls_dir/ca.pem" -CAkey "$tls_dir/ca.key" -CAcreateserial \
    -days 30 -extfile "$tls_dir/san.ext" -out "$tls_dir/broker.crt" 2>/dev/null
  # Kafka's PEM keystore: the unencrypted PKCS#8 key followed by the certificate.
  cat "$tls_dir/broker.key" "$tls_dir/broker.crt" > "$tls_dir/broker.pem"
  chmod 600 "$tls_dir/ca.key" "$tls_dir/broker.key" "$tls_dir/broker.pem"
}

password_of() { sed -n 's/^sasl.password=//p' "$secrets_dir/$1.properties"; }

make_credentials() {
  local user
  mkdir -p "$secrets_dir"
  chmod 700 "$secrets_dir"
  for user in admin $scram_users; do
    [ -f "$secrets_dir/$user.properties" ] && continue
    (umask 077; cat > "$secrets_dir/$user.properties" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.username=$user
sasl.password=$(openssl rand -hex 16)
ssl.ca.location=$tls_dir/ca.pem
EOF
    )
  done
}

# StorageTool arguments creating every SCRAM user at format time (one argument per line).
scram_arguments() {
  local user
  for user in admin $scram_users; do
    printf -- '--add-scram\nSCRAM-SHA-512=[name=%s,password=%s]\n' "$user" "$(password_of "$user")"
  done
}

start_zookeeper() {
  local dir=$cluster_dir/zookeeper
  mkdir -p "$dir/data"
  # Its admin server would take port 8080 otherwise.
  nohup java -Xms"$zookeeper_heap" -Xmx"$zookeeper_heap" -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    -Dzookeeper.admin.enableServer=false -Dlog4j2.configurationFile="$root/deploy/kafka/log4j2.properties" \
    -Dkafka.logs.dir="$dir" -cp "$lib/*" org.apache.zookeeper.server.ZooKeeperServerMain \
    "$(zookeeper_port)" "$dir/data" >"$dir/stdout.log" 2>&1 </dev/null &
  echo $! > "$dir/pid"
}

start_node() {
  local n=$1 dir=$cluster_dir/node$1 scram=() jvm=()
  # Kafka 4 fetches only the OAuth URLs a JVM property allows.
  if oauth_enabled; then jvm=("-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=$oauth_jwks_url${OAUTH_TOKEN_URL:+,$OAUTH_TOKEN_URL}"); fi
  if kerberos_enabled; then jvm+=("-Djava.security.krb5.conf=${KERBEROS_KRB5_CONF:?KERBEROS_KRB5_CONF is needed with KERBEROS_KEYTAB}"); fi
  if ! zookeeper_mode && [ ! -f "$dir/data/meta.properties" ]; then
    if secured; then mapfile -t scram < <(scram_arguments); fi
    java -XX:TieredStopAtLevel=1 -cp "$(classpath)" -Dlog4j2.configurationFile="$root/deploy/kafka/log4j2.properties" -Dkafka.logs.dir="$dir" \
      kafka.tools.StorageTool format -c "$dir/node.properties" --cluster-id="$(cat "$cluster_dir/cluster.id")" \
      "${scram[@]}" >"$dir/format.log" 2>&1 || die "formatting node $n failed: see $dir/format.log"
  fi
  nohup java -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:TieredStopAtLevel=1 \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$root/deploy/kafka/log4j2.properties" \
    ${jvm[@]+"${jvm[@]}"} -Dkafka.logs.dir="$dir" -cp "$(classpath)" kafka.Kafka "$dir/node.properties" \
    >"$dir/stdout.log" 2>&1 </dev/null &
  echo $! > "$dir/pid"
}

up() {
  check_version
  resolve_jars
  if tiered; then resolve_tiered_storage_jar; mkdir -p "$cluster_dir/remote-storage"; fi
  [ -x "$python" ] || die "no python at $python (run 'make venv' or set PYTHON)"
  zookeeper_mode || [ -f "$cluster_dir/cluster.id" ] || "$python" -c \
    'import base64, uuid; print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))' \
    > "$cluster_dir/cluster.id"
  local n ready_config=()
  case "$security" in
    plaintext) ;;
    sasl_ssl) make_tls; make_credentials; ready_config=("$secrets_dir/admin.properties") ;;
    *) die "SECURITY=$security: expected plaintext or sasl_ssl" ;;
  esac
  if zookeeper_mode && ! zookeeper_alive; then start_zookeeper; fi
  for n in "${nodes[@]}"; do
    if alive "$n"; then continue; fi
    write_config "$n"
    start_node "$n"
  done
  "$python" "$root/deploy/kafka/wait_ready.py" "$(bootstrap)" "${#nodes[@]}" 120 ${ready_config[@]+"${ready_config[@]}"} \
    || die "cluster did not become ready: see $cluster_dir/node*/server.log"
  if secured; then echo "admin client config: $secrets_dir/admin.properties" >&2; fi
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
  # ZooKeeper last: the brokers' controlled shutdown goes through it.
  if zookeeper_alive; then
    p=$(zookeeper_pid)
    kill -TERM "$p" 2>/dev/null || true
    deadline=$((SECONDS + 10))
    while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    kill -KILL "$p" 2>/dev/null || true
  fi
  rm -f "$cluster_dir/zookeeper/pid"
  echo "stopped"
}

status() {
  local n
  for n in "${nodes[@]}"; do
    if alive "$n"; then echo "node $n: running (pid $(pid_of "$n"), 127.0.0.1:$(broker_port "$n"))"
    else echo "node $n: stopped"; fi
  done
  if zookeeper_alive; then echo "zookeeper: running (pid $(zookeeper_pid), 127.0.0.1:$(zookeeper_port))"; fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
