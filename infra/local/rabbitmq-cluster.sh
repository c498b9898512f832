#!/usr/bin/env bash
# A three-node RabbitMQ cluster on this machine, beside (not instead of) the default node on 5672.
#   bash infra/local/rabbitmq-cluster.sh start    start herald-1..3, join them, print AMQP_URLS
#   bash infra/local/rabbitmq-cluster.sh stop     stop the three nodes (data kept)
#   bash infra/local/rabbitmq-cluster.sh reset    stop and delete their data
#   bash infra/local/rabbitmq-cluster.sh status   cluster_status as node 1 sees it
#   bash infra/local/rabbitmq-cluster.sh kill N   SIGKILL node N (chaos); `start-node N` brings it back
#   bash infra/local/rabbitmq-cluster.sh stop-node N / start-node N
#   bash infra/local/rabbitmq-cluster.sh ctl N args…   rabbitmqctl against node N (e.g. an alarm)
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
    # An Erlang crash dump lands here, not in the caller's directory; with no cluster directory yet
    # (`reset` before any `start`), nothing runs: rabbitmqctl there would fail for want of a cookie
    # and leave its dump where it was called from.
    cd "$BASE" || exit 1
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
  rm -f "$BASE/node-$n/rabbitmq.pid" # the runtime writes it afresh
  touch "$BASE/node-$n/started"
  on "$n" "$BIN/rabbitmq-server" -detached >/dev/null
}

# Node N's runtime's OS pid, or nothing when it is not running: the beam process booting RabbitMQ
# (`-s rabbit boot`; a rabbitmqctl has the same environment) whose environment names this node's
# pid file (the node's name is not on its command line). The pid file alone did not tell: it was
# once missing after a node crashed at boot and was started again, and a runtime that stops
# before writing it leaves none.
node_pid() {
  local want="RABBITMQ_PID_FILE=$BASE/node-$1/rabbitmq.pid" p args
  for p in $(pgrep -x beam.smp); do
    args=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
    if [[ $args == *" -s rabbit boot "* ]] && grep -qzxF "$want" "/proc/$p/environ" 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
}

# Why node N is not up, for the operator or the CI log: its log's last lines and, if it crashed,
# the crash dump's slogan.
report_node() {
  local dir="$BASE/node-$1"
  echo "rabbitmq-cluster: the last lines of $dir/log/herald-$1@localhost.log:" >&2
  tail -n 25 "$dir/log/herald-$1@localhost.log" 2>/dev/null | cut -c1-300 >&2 || true
  crash_slogan "$1"
}

crash_slogan() { # of a crash since node N was last started
  local dump="$BASE/node-$1/log/erl_crash.dump"
  [ "$dump" -nt "$BASE/node-$1/started" ] || return 0
  echo "rabbitmq-cluster: $dump: $(grep -m1 '^Slogan' "$dump" | cut -c1-300)" >&2
}

# Wait for nodes N… to be up, all at once: 120 s, counted again from each restart. Nodes of a
# formed cluster restarting side by side can crash at boot while syncing feature flags with each
# other (RabbitMQ 3.10: incompatible_feature_flags / badmap, an erl_crash.dump in the node's log
# dir), and the others then wait for that node's Mnesia tables (10 × 30 s) without failing. So
# every pending node is watched on each pass, and one whose runtime is gone (seen twice, a second
# apart) is started again, twice at most. (Waiting for one node at a time stalled on node 1,
# alive and waiting for tables, while the node it waited for lay crashed: the clean-clone CI run
# of cfa6be4, and 1 of 13 restarts of a formed cluster under load on 2026-11-29.)
wait_nodes() {
  local pending=("$@") left n since=$SECONDS
  local -A gone=() restarts=()
  while :; do
    left=()
    for n in "${pending[@]}"; do
      if amqp_up "$n" && ctl "$n" await_startup >/dev/null 2>&1; then continue; fi
      left+=("$n")
      if [ -n "$(node_pid "$n")" ]; then gone[$n]=0; continue; fi
      gone[$n]=$((${gone[$n]:-0} + 1))
      [ "${gone[$n]}" -ge 2 ] && [ "${restarts[$n]:-0}" -lt 2 ] || continue
      restarts[$n]=$((${restarts[$n]:-0} + 1)) gone[$n]=0 since=$SECONDS
      echo "rabbitmq-cluster: node herald-$n stopped while booting; starting it again (${restarts[$n]})" >&2
      crash_slogan "$n"
      start_node "$n"
    done
    pending=("${left[@]}")
    [ ${#pending[@]} -gt 0 ] || return 0
    if [ $((SECONDS - since)) -ge 120 ]; then
      for n in "${pending[@]}"; do
        echo "rabbitmq-cluster: node herald-$n did not start within 120 s (started again ${restarts[$n]:-0} times)" >&2
        report_node "$n"
      done
      return 1
    fi
    sleep 1
  done
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

stop_all() {
  for n in "${NODES[@]}"; do stop_node "$n" & done
  wait
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
    wait_nodes "${NODES[@]}"
    for n in 2 3; do join_node "$n"; done
    echo "rabbitmq-cluster: herald-1..3 running; AMQP_URLS=$(urls)"
    ;;
  stop) stop_all ;;
  reset)
    stop_all
    rm -rf "$BASE"
    ;;
  status) ctl 1 cluster_status ;;
  urls) urls ;;
  kill)
    pid=$(node_pid "$2")
    if [ -z "$pid" ]; then
      echo "rabbitmq-cluster: node herald-$2 is not running" >&2
      exit 1
    fi
    kill -9 "$pid"
    ;;
  stop-node) stop_node "$2" ;;
  start-node) start_node "$2"; wait_nodes "$2" ;;
  ctl) shift; ctl "$@" ;;
  *) echo "usage: $0 start|stop|reset|status|urls|kill N|stop-node N|start-node N|ctl N args…" >&2; exit 2 ;;
esac
