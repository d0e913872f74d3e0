#!/usr/bin/env bash
# Make sure PostgreSQL (5432) and Redis (6379) answer on localhost; install/start them if not.
set -euo pipefail

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() {
  for _ in $(seq 1 60); do port_open "$1" && return 0; sleep 0.5; done
  return 1
}
apt_install() {
  [ "$(id -u)" = 0 ] || { echo "need root to install $*" >&2; return 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! port_open 5432; then
  command -v pg_ctlcluster >/dev/null || apt_install postgresql
  version=$(ls /etc/postgresql | sort -V | tail -1)
  conf=/etc/postgresql/$version/main/pg_hba.conf
  # Tests connect as "postgres" over TCP without a password (local, throwaway databases).
  grep -q "leaflab-trust" "$conf" || {
    sed -i '1i host all all 127.0.0.1/32 trust # leaflab-trust' "$conf"
    sed -i '1i host all all ::1/128 trust # leaflab-trust' "$conf"
  }
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_port 5432 || { echo "PostgreSQL did not start on 5432" >&2; exit 1; }
fi

if ! port_open 6379; then
  command -v redis-server >/dev/null || apt_install redis-server
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/leaflab.log
  wait_port 6379 || { echo "Redis did not start on 6379" >&2; exit 1; }
fi
# The dashboards test scrapes a real stack with Debian's Prometheus.
command -v prometheus >/dev/null || apt_install --no-install-recommends prometheus
echo "PostgreSQL and Redis are up; Prometheus is installed"
