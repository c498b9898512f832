#!/usr/bin/env bash
# A three-node RabbitMQ cluster on this machine, beside (not instead of) the default node on 5672.
#   bash infra/local/rabbitmq-cluster.sh start    start herald-1..3, join them, print AMQP_URLS
#   bash infra/local/rabbitmq-cluster.sh stop     stop the three nodes (data kept)
#   bash infra/local/rabbitmq-cluster.sh reset    stop and delete their data
#   bash infra/local/rabbitmq-cluster.sh status   cluster_status as node 1 sees it
#   bash infra/local/rabbitmq-cluster.sh kill N   SIGKILL node N (chaos); `start-node N` brings it back
#   bash infra/local/rabbitmq-cluster.sh stop-node N / start-node N
#
# Each node has its own name (herald-N@localhost), ports (AMQP 5700+N, management 15700+N,
# distribution 25700+N), data, logs, config and env file, so the system's rabbitmq-env.conf
# (which fixes the node name) and rabbitmq.conf (which binds 5672) are never read. The nodes run
# as the invoking user from the Erlang runtime directly (not the Debian wrappers, which switch to
# the rabbitmq user), with one cookie in the cluster's own directory.
# Settings: HERALD_CLUSTER_DIR (default /tmp/herald-rabbitmq-cluster).
set -euo pipefail

BASE=${HERALD_CLUSTER_DIR:-/tmp/herald-rabbitmq-cluster}
BIN=/usr/lib/rabbitmq/bin
NODES=(1 2 3)

need_rabbitmq() {
  [ -x "$BIN/rabbitmq-server" ] && return 0
  echo "rabbitmq-cluster: RabbitMQ is not installed (bash infra/local/services.sh installs it)" >&2
  exit 1
}

on() { # on N command args…: run a RabbitMQ command as node N, in that node's environment
  local n=$1 dir="$BASE/node-$1"
  shift
  (
    export HOME="$BASE" \
      RABBITMQ_NODENAME="herald-$n@localhost" \
      RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
      RABBITMQ_NODE_PORT=$((5700 + n)) \
      RABBITMQ_DIST_PORT=$((25700 + n)) \
      RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf" \
      RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" \
      RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
      RABBITMQ_MNESIA_BASE="$dir/mnesia" \
      RABBITMQ_MNESIA_DIR="$dir/mnesia/herald-$n" \
      RABBITMQ_LOG_BASE="$dir/log" \
      RABBITMQ_PID_FILE="$dir/rabbitmq.pid" \
      RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
      ERL_EPMD_ADDRESS=127.0.0.1
    cd "$BASE" # an Erlang crash dump lands here, not in the caller's directory
    "$@"
  )
}

ctl() { local n=$1; shift; on "$n" timeout 60 "$BIN/rabbitmqctl" -n "herald-$n@localhost" "$@"; }

amqp_up() { timeout 2 bash -c "echo > /dev/tcp/127.0.0.1/$((5700 + $1))" 2>/dev/null; }

prepare() {
  mkdir -p "$BASE"
  if [ ! -f "$BASE/.erlang.cookie" ]; then
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$BASE/.erlang.cookie"
    chmod 400 "$BASE/.erlang.cookie"
  fi
  for n in "${NODES[@]}"; do
    local dir="$BASE/node-$n"
    mkdir -p "$dir/mnesia" "$dir/log"
    : >"$dir/rabbitmq-env.conf"
    cat >"$dir/rabbitmq.conf" <<EOF
listeners.tcp.default = 127.0.0.1:$((5700 + n))
management.tcp.ip = 127.0.0.1
management.tcp.port = $((15700 + n))
loopback_users = none
# A node that restarts rejoins its cluster by itself.
cluster_formation.peer_discovery_backend = classic_config
cluster_formation.classic_config.nodes.1 = herald-1@localhost
cluster_formation.classic_config.nodes.2 = herald-2@localhost
cluster_formation.classic_config.nodes.3 = herald-3@localhost
EOF
    echo '[rabbitmq_management].' >"$dir/enabled_plugins"
  done
}

start_node() {
  local n=$1
  if amqp_up "$n"; then return 0; fi
  rm -f "$BASE/node-$n/rabbitmq.pid" # a stale one would read as a live runtime
  touch "$BASE/node-$n/started"
  on "$n" "$BIN/rabbitmq-server" -detached >/dev/null
}

# Whether node N's runtime has gone since it was started: it wrote its pid file and that process no
# longer exists, or it died before writing one, leaving an erl_crash.dump newer than its start.
node_died() {
  local pid dir="$BASE/node-$1"
  pid=$(cat "$dir/rabbitmq.pid" 2>/dev/null || true)
  if [ -n "$pid" ]; then ! kill -0 "$pid" 2>/dev/null; return; fi
  [ -f "$dir/log/erl_crash.dump" ] && [ "$dir/log/erl_crash.dump" -nt "$dir/started" ]
}

# Node N's runtime's OS pid: its pid file, or, when the file is missing, the running node's own
# answer, written back to the file. The file has been seen missing once (in 3 runs of the failover
# test) after a node crashed at boot and was started again below, so a later kill found no pid.
node_pid() {
  local n=$1 pidfile="$BASE/node-$1/rabbitmq.pid" pid
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if [ -z "$pid" ]; then
    pid=$(ctl "$n" eval 'os:getpid().' 2>/dev/null | tr -d '"' || true)
    if [ -n "$pid" ]; then echo "$pid" >"$pidfile"; fi
  fi
  echo "$pid"
}

# Wait for node N to be up. Nodes of a formed cluster restarting side by side can crash at boot
# while syncing feature flags with each other (RabbitMQ 3.10: incompatible_feature_flags /
# badmap, an erl_crash.dump in the node's log dir); such a node is started again, twice at most.
wait_node() {
  local n=$1 restarts=0
  for _ in $(seq 1 120); do
    if amqp_up "$n" && ctl "$n" await_startup >/dev/null 2>&1; then
      node_pid "$n" >/dev/null
      return 0
    fi
    if node_died "$n" && [ "$restarts" -lt 2 ]; then
      restarts=$((restarts + 1))
      echo "rabbitmq-cluster: node herald-$n stopped while booting; starting it again ($restarts)" >&2
      start_node "$n"
    fi
    sleep 1
  done
  echo "rabbitmq-cluster: node herald-$n did not start within 120 s; see $BASE/node-$n/log" >&2
  return 1
}


join_node() {
  local n=$1
  if ctl 1 cluster_status --formatter json 2>/dev/null | node -e '
    const s = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const members = [...(s.disk_nodes ?? []), ...(s.running_nodes ?? [])];
    process.exit(members.includes(process.argv[1]) ? 0 : 1);' "herald-$n@localhost"; then
    return 0
  fi
  ctl "$n" stop_app >/dev/null
  ctl "$n" join_cluster herald-1@localhost >/dev/null
  ctl "$n" start_app >/dev/null
}

stop_node() { # a clean stop, then SIGKILL if the node's runtime has not gone within 30 s
  local n=$1 pid
  pid=$(node_pid "$n")
  ctl "$n" stop >/dev/null 2>&1 || true
  [ -n "$pid" ] || return 0
  for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || return 0; sleep 1; done
  kill -9 "$pid" 2>/dev/null || true
}

urls() {
  local list=()
  for n in "${NODES[@]}"; do list+=("amqp://guest:guest@127.0.0.1:$((5700 + n))"); done
  (IFS=,; echo "${list[*]}")
}

cmd=${1:-start}
case "$cmd" in
  start)
    need_rabbitmq
    prepare
    for n in "${NODES[@]}"; do start_node "$n"; done
    for n in "${NODES[@]}"; do wait_node "$n"; done
    for n in 2 3; do join_node "$n"; done
    echo "rabbitmq-cluster: herald-1..3 running; AMQP_URLS=$(urls)"
    ;;
  stop)
    for n in "${NODES[@]}"; do stop_node "$n" & done
    wait
    ;;
  reset)
    "$0" stop
    rm -rf "$BASE"
    ;;
  status) ctl 1 cluster_status ;;
  urls) urls ;;
  kill)
    pid=$(node_pid "$2")
    if [ -z "$pid" ]; then
      echo "rabbitmq-cluster: node herald-$2 has no pid file and does not answer" >&2
      exit 1
    fi
    kill -9 "$pid"
    ;;
  stop-node) stop_node "$2" ;;
  start-node) start_node "$2"; wait_node "$2" ;;
  *) echo "usage: $0 start|stop|reset|status|urls|kill N|stop-node N|start-node N" >&2; exit 2 ;;
esac
