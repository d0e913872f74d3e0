#!/usr/bin/env bash
# The fault tests (tests/faults) start private PostgreSQL and Redis servers they can kill,
# and put a worker in a network namespace: they need the server binaries and iproute2,
# even where the shared 5432/6379 services run elsewhere (a container, another host).
set -euo pipefail

missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v ip >/dev/null || missing+=(iproute2)
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "need root to install ${missing[*]}" >&2; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "fault-test tools present"
