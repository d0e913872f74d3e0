#!/bin/sh
# The redis:7 image's contract, on Debian's Redis: the command is redis-server with
# any flags (or flags alone), run as the redis user in /data, and without a config
# file protected mode is off (the container's network is the guard, as upstream).
set -eu
case "${1:-}" in
    -*|"") set -- redis-server "$@" ;;
esac
if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
    mkdir -p /data
    chown redis:redis /data
    exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi
if [ "$1" = redis-server ]; then
    case "${2:-}" in
        *.conf) ;;
        *) set -- "$@" --protected-mode no ;;
    esac
fi
exec "$@"
