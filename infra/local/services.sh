#!/usr/bin/env bash
# Make sure RabbitMQ (with its management API) and PostgreSQL are running on this machine.
# Starts them if installed, installs them from Debian packages if absent. Idempotent.
# Needs root (or sudo) only for what is missing: when RabbitMQ, its management API and
# PostgreSQL already answer on 127.0.0.1, it installs, starts and reconfigures nothing.
# Used by `npm start` and `.ci/run`.
set -euo pipefail

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "services: '$*' needs root (or sudo), which this user does not have; start RabbitMQ and PostgreSQL another way, then run npm start again" >&2; return 1
  fi
}
apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

wait_until() { # wait_until <seconds> <what> <command...>
  local limit=$1 what=$2; shift 2
  for _ in $(seq 1 "$limit"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  echo "services: $what did not come up within ${limit}s" >&2; return 1
}

# --- RabbitMQ -------------------------------------------------------------
# Probe the ports, not rabbitmqctl: rabbitmqctl can hang (e.g. on a slow host-name lookup)
# while the broker itself is serving.
amqp_up() { timeout 3 bash -c 'echo > /dev/tcp/127.0.0.1/5672' 2>/dev/null; }
mgmt_up() { curl -fsS -m 5 -u guest:guest http://127.0.0.1:15672/api/overview >/dev/null 2>&1; }
if ! amqp_up; then
  command -v rabbitmq-server >/dev/null || { echo "services: installing rabbitmq-server"; apt_install rabbitmq-server; }
  echo "services: starting RabbitMQ"
  as_root rabbitmq-server -detached
  wait_until 120 "RabbitMQ" amqp_up
fi
if ! mgmt_up; then
  echo "services: enabling the RabbitMQ management plugin"
  as_root timeout 120 rabbitmq-plugins enable rabbitmq_management >/dev/null || true
  wait_until 90 "RabbitMQ management API" mgmt_up
fi

# --- PostgreSQL -----------------------------------------------------------
pg_up() {
  if command -v pg_isready >/dev/null; then pg_isready -q -h 127.0.0.1 -p 5432
  else timeout 3 bash -c 'echo > /dev/tcp/127.0.0.1/5432' 2>/dev/null
  fi
}
if ! pg_up; then
  command -v pg_ctlcluster >/dev/null || { echo "services: installing postgresql"; apt_install postgresql; }
  echo "services: starting PostgreSQL"
  as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start
  wait_until 60 "PostgreSQL" pg_up
fi
if ! command -v psql >/dev/null; then
  echo "services: RabbitMQ and PostgreSQL answer (psql is not installed: the databases herald and test are not checked)"
  exit 0
fi
if ! psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
  # A fresh Debian install asks for passwords on TCP; Herald's local setup uses trust on loopback.
  echo "services: allowing trusted loopback connections to PostgreSQL"
  hba=$(as_root su postgres -c "psql -Atqc 'show hba_file'")
  as_root sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  as_root su postgres -c "psql -Atqc 'select pg_reload_conf()'" >/dev/null
fi
for db in herald test; do
  if [ -z "$(psql -h 127.0.0.1 -U postgres -d postgres -Atqc "select 1 from pg_database where datname = '$db'")" ]; then
    psql -h 127.0.0.1 -U postgres -d postgres -qc "create database $db" >/dev/null
  fi
done
echo "services: RabbitMQ and PostgreSQL are up"
