#!/usr/bin/env bash
# Make a Docker daemon (and bubblewrap, the sandbox's fallback backend) usable.
#
# Idempotent: installs docker.io / bubblewrap with apt-get only when missing,
# starts dockerd in the background only when `docker info` fails, then waits
# until the daemon answers. Needs root for the install/start steps; a daemon
# that already answers needs nothing.
#
#   scripts/ensure_docker.sh            # docker + bubblewrap
#   ENSURE_DOCKER_TIMEOUT=120 scripts/ensure_docker.sh
set -euo pipefail

TIMEOUT="${ENSURE_DOCKER_TIMEOUT:-90}"
LOG="${ENSURE_DOCKER_LOG:-/var/log/leaflab-dockerd.log}"
APT_UPDATED=0

log() { echo "ensure_docker: $*" >&2; }

apt_install() {
    if [ "$(id -u)" != "0" ]; then
        log "need root to install $* (run: sudo apt-get install -y $*)"
        return 1
    fi
    if [ "$APT_UPDATED" = "0" ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

docker_ok() { docker info >/dev/null 2>&1; }

# bubblewrap is the fallback backend; cheap to have, so make sure of it too.
if ! command -v bwrap >/dev/null 2>&1; then
    log "installing bubblewrap"
    apt_install bubblewrap || log "bubblewrap unavailable (bwrap backend will refuse to run)"
fi

if docker_ok; then
    log "docker daemon already running"
    exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
    log "installing docker.io"
    apt_install docker.io
fi
# Some images ship only a static client; the Debian package brings the CLI too.
if ! command -v docker >/dev/null 2>&1; then
    apt_install docker.io
fi

# A concurrent caller may have started it between our check and now; only one
# dockerd may own /var/run/docker.pid, so check the pid file before starting.
if ! docker_ok; then
    pidfile=/var/run/docker.pid
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        log "dockerd (pid $(cat "$pidfile")) is starting; waiting"
    else
        if [ "$(id -u)" != "0" ]; then
            log "dockerd is not running and starting it needs root"
            exit 1
        fi
        rm -f "$pidfile"
        log "starting dockerd (log: $LOG)"
        mkdir -p "$(dirname "$LOG")"
        nohup dockerd >>"$LOG" 2>&1 </dev/null &
        disown || true
    fi
fi

deadline=$((SECONDS + TIMEOUT))
until docker_ok; do
    if [ "$SECONDS" -ge "$deadline" ]; then
        log "docker daemon did not answer within ${TIMEOUT}s; see $LOG"
        tail -n 20 "$LOG" >&2 2>/dev/null || true
        exit 1
    fi
    sleep 0.5
done
log "docker daemon ready"
