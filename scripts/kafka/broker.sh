#!/usr/bin/env bash
# A single-node Apache Kafka 3.9 broker (KRaft, combined broker and controller) on 127.0.0.1,
# without Docker: the broker's jars come from Maven Central through scripts/kafka/pom.xml.
#
#   scripts/kafka/broker.sh start   fetches the jars into the cache folder (once), formats KRaft
#                                   storage in a new temporary folder, starts the broker on free
#                                   ports, waits until it serves clients and prints, for `eval`:
#                                     KAFKA_BROKERS=127.0.0.1:<port>
#                                     KAFKA_BROKER_DIR=<temporary folder>
#   scripts/kafka/broker.sh stop DIR
#                                   stops the broker started in DIR and removes DIR.
#
# KAFKA_CACHE_DIR: where the jars are kept (default ~/.cache/voucher-service/kafka-<version>).
# KAFKA_START_TIMEOUT_S: longest wait for the broker to serve clients (default 90).
# The broker's log is DIR/broker.log; progress goes to stderr, only the two lines above to stdout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")"
cache="${KAFKA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/voucher-service/kafka-$version}"
say() { echo "kafka: $*" >&2; }

fetch_jars() {
  if [[ -f "$cache/.complete" ]]; then return; fi
  command -v mvn >/dev/null || { say "mvn is needed to fetch the broker's jars (apt-get install maven)"; exit 1; }
  say "fetching Apache Kafka $version's jars from Maven Central into $cache"
  rm -rf "$cache" && mkdir -p "$cache"
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$cache/libs" >&2
  touch "$cache/.complete"
}

free_port() {
  node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

start() {
  command -v java >/dev/null || { say "java (17 or later) is needed to run the broker"; exit 1; }
  fetch_jars
  local dir port controller_port classpath
  dir="$(mktemp -d "${TMPDIR:-/tmp}/kafka-broker.XXXXXX")"
  port="$(free_port)"
  controller_port="$(free_port)"
  while [[ "$controller_port" == "$port" ]]; do controller_port="$(free_port)"; done
  classpath="$cache/libs/*"
  cat >"$dir/server.properties" <<PROPERTIES
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
PROPERTIES
  cat >"$dir/log4j.properties" <<'LOG4J'
log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${kafka.logs.dir}/broker.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.KafkaRaftServer=INFO
LOG4J
  local java_opts=(-Xms256m -Xmx512m -XX:+UseSerialGC -Dkafka.logs.dir="$dir" -Dlog4j.configuration="file:$dir/log4j.properties")
  java "${java_opts[@]}" -cp "$classpath" kafka.tools.StorageTool format \
    -t "$(java "${java_opts[@]}" -cp "$classpath" kafka.tools.StorageTool random-uuid)" \
    -c "$dir/server.properties" >"$dir/format.log" 2>&1 || { cat "$dir/format.log" >&2; exit 1; }
  nohup java "${java_opts[@]}" -cp "$classpath" kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 &
  echo $! >"$dir/broker.pid"
  local waited=0 limit="${KAFKA_START_TIMEOUT_S:-90}"
  until grep -q 'Kafka Server started' "$dir/broker.log" 2>/dev/null; do
    if ! kill -0 "$(cat "$dir/broker.pid")" 2>/dev/null; then
      say "the broker exited while starting; its log:"
      cat "$dir/broker.log" "$dir/stdout.log" >&2 || true
      exit 1
    fi
    if ((waited >= limit * 2)); then
      say "the broker did not start within ${limit}s; its log is $dir/broker.log"
      stop "$dir"
      exit 1
    fi
    sleep 0.5
    waited=$((waited + 1))
  done
  say "Apache Kafka $version serves 127.0.0.1:$port (log: $dir/broker.log)"
  echo "KAFKA_BROKERS=127.0.0.1:$port"
  echo "KAFKA_BROKER_DIR=$dir"
}

stop() {
  local dir="${1:?usage: broker.sh stop DIR}"
  [[ -f "$dir/server.properties" ]] || { say "$dir holds no broker"; exit 1; }
  if [[ -f "$dir/broker.pid" ]]; then
    local pid
    pid="$(cat "$dir/broker.pid")"
    if kill "$pid" 2>/dev/null; then
      for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  *) echo "usage: $0 start | stop DIR" >&2; exit 2 ;;
esac
