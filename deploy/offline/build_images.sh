#!/usr/bin/env bash
# The images docker-compose.yml needs, built where no image registry answers: from
# Debian packages (debootstrap) and PyPI wheels (the host's pip), then `docker import`.
#
#   deploy/offline/build_images.sh [postgres|redis|leaflab ...]   (default: all three)
#
# - leaflab-standin/postgres:16 and leaflab-standin/redis:7: Debian's PostgreSQL 15 and
#   Redis 7 behind entrypoints that honour the official images' environment
#   (POSTGRES_USER/PASSWORD/DB, PGDATA; redis-server flags). PostgreSQL is 15, not 16:
#   bookworm's version, and all Leaflab needs. Tag them as postgres:16 and redis:7 to
#   boot the compose file unchanged, or name them in an override (tests/deploy does).
# - leaflab:latest: deploy/offline/Dockerfile on leaflab-deps:<hash> (python3.11 and
#   every runtime dependency in /opt/leaflab), the layout of deploy/Dockerfile.
#
# Each base is tagged by a hash of its recipe and reused while the tag exists, so a
# second run costs seconds (leaflab:latest is rebuilt from the code each time, which
# takes seconds on the cached base). One build per machine at a time (a lock), so
# concurrent first starts wait instead of debootstrapping their own copies.
# Needs root (debootstrap, chroot), Docker, a Debian mirror (MIRROR) and PyPI.
set -euo pipefail
# A failure inside $(...) must stop the build too (a half-made base is never tagged).
shopt -s inherit_errexit
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
SUITE="${SUITE:-bookworm}"
PIP="${PIP:-$ROOT/.venv/bin/python -m pip}"
WANTED=("$@")
[ ${#WANTED[@]} -gt 0 ] || WANTED=(postgres redis leaflab)

say() { echo "build_images: $*" >&2; }

exec 9>/var/tmp/leaflab-offline-images.lock
if ! flock -n 9; then
    say "another build of these images is running on this machine; waiting for it"
    flock 9
fi
command -v debootstrap >/dev/null 2>&1 || {
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2
}

recipe() {  # recipe VERSION FILE...: a short hash of the suite, version and files
    local version=$1
    shift
    { echo "$SUITE $version"; cat "$@"; } | sha256sum | cut -c1-12
}
# Bump a version when its builder's commands below change (the files are hashed).
POSTGRES_RECIPE=1
REDIS_RECIPE=1
DEPS_RECIPE=1

have() { docker image inspect "$1" >/dev/null 2>&1; }

ROOTFS=""
cleanup() {
    if [ -n "$ROOTFS" ] && [ -d "$ROOTFS" ]; then
        umount -l "$ROOTFS/proc" 2>/dev/null || true
        rm -rf "$ROOTFS"
    fi
}
trap cleanup EXIT

bootstrap() {  # bootstrap PACKAGES: a fresh minbase rootfs in $ROOTFS
    ROOTFS="$(mktemp -d /var/tmp/leaflab-offline-rootfs.XXXXXX)"
    local started=$SECONDS
    say "debootstrap $SUITE with $1 (about a minute)"
    debootstrap --variant=minbase --include="$1" "$SUITE" "$ROOTFS" "$MIRROR" >/dev/null
    say "  debootstrap took $((SECONDS - started)) s"
}

import() {  # import TAG CHANGE...: the rootfs as an image, without the host's traces
    local tag=$1
    shift
    : >"$ROOTFS/etc/resolv.conf"
    rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/tmp/*
    local args=()
    for change in "$@"; do args+=(--change "$change"); done
    say "docker import $tag"
    tar -C "$ROOTFS" -c . | docker import "${args[@]}" \
        --change "LABEL org.leaflab.recipe=offline" - "$tag" >/dev/null
    rm -rf "$ROOTFS"
    ROOTFS=""
}

build_postgres() {
    local tag="leaflab-standin/postgres:16"
    local stamp
    stamp="leaflab-standin/postgres:16-$(recipe "$POSTGRES_RECIPE" "$HERE/postgres-entrypoint.sh")"
    if have "$stamp"; then docker tag "$stamp" "$tag"; echo "$tag"; return; fi
    bootstrap postgresql-15,util-linux,ca-certificates
    # The package's own cluster is not the image's: the entrypoint makes one in PGDATA.
    rm -rf "$ROOTFS/var/lib/postgresql/15" "$ROOTFS/etc/postgresql/15"
    install -m 755 "$HERE/postgres-entrypoint.sh" "$ROOTFS/usr/local/bin/docker-entrypoint.sh"
    for tool in pg_isready psql; do
        ln -sf "/usr/lib/postgresql/15/bin/$tool" "$ROOTFS/usr/local/bin/$tool"
    done
    import "$stamp" \
        'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 PGDATA=/var/lib/postgresql/data' \
        'VOLUME /var/lib/postgresql/data' 'EXPOSE 5432' \
        'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' 'CMD ["postgres"]'
    docker tag "$stamp" "$tag"
    echo "$tag"
}

build_redis() {
    local tag="leaflab-standin/redis:7"
    local stamp
    stamp="leaflab-standin/redis:7-$(recipe "$REDIS_RECIPE" "$HERE/redis-entrypoint.sh")"
    if have "$stamp"; then docker tag "$stamp" "$tag"; echo "$tag"; return; fi
    bootstrap redis-server,redis-tools,util-linux
    install -m 755 "$HERE/redis-entrypoint.sh" "$ROOTFS/usr/local/bin/docker-entrypoint.sh"
    import "$stamp" \
        'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
        'VOLUME /data' 'WORKDIR /data' 'EXPOSE 6379' \
        'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' 'CMD ["redis-server"]'
    docker tag "$stamp" "$tag"
    echo "$tag"
}

runtime_requirements() {  # pyproject's runtime dependencies, one per line
    "$ROOT/.venv/bin/python" - "$ROOT/pyproject.toml" <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
# setuptools and wheel: the image installs Leaflab itself (editable) without a network.
# async-timeout: redis needs it below Python 3.11.3 (bookworm has 3.11.2), which the
# host's pip resolving for its own newer Python would leave out.
for requirement in [*project["dependencies"], "setuptools>=68", "wheel", "async-timeout>=4.0.3"]:
    print(requirement)
PY
}

build_deps() {  # prints the tag of the dependency base
    local list
    list="$(mktemp)"
    runtime_requirements >"$list"
    local tag
    tag="leaflab-deps:$(recipe "$DEPS_RECIPE" "$list")"
    if have "$tag"; then rm -f "$list"; echo "$tag"; return; fi
    bootstrap python3,python3-venv,ca-certificates,curl,passwd,libgomp1
    # Wheels come through the host's pip (its index, proxy and CA setup; torch's CPU
    # build from the local wheel store) and are installed in the chroot offline.
    local wheels="$ROOTFS/tmp/wheels"
    mkdir -p "$wheels"
    local started=$SECONDS
    say "collecting $(wc -l <"$list") requirements' wheels with the host's pip"
    # `pip wheel` builds anything PyPI has only as source portably (no -march=native; the
    # variable is the old hnswlib pin's switch, harmless for the rest).
    HNSWLIB_NO_NATIVE=1 $PIP wheel --quiet --wheel-dir "$wheels" -r "$list" >&2
    cp "$list" "$wheels/requirements.txt"
    mount -t proc proc "$ROOTFS/proc"
    # The chroot gets none of the host's PIP_* settings (their paths are the host's).
    local clean=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8)
    chroot "$ROOTFS" "${clean[@]}" python3 -m venv /opt/leaflab
    say "installing them into /opt/leaflab"
    chroot "$ROOTFS" "${clean[@]}" /opt/leaflab/bin/pip install --quiet --no-cache-dir --no-index \
        --find-links /tmp/wheels -r /tmp/wheels/requirements.txt >&2
    umount -l "$ROOTFS/proc"
    say "  wheels took $((SECONDS - started)) s"
    rm -f "$list"
    import "$tag" 'ENV PATH=/opt/leaflab/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8'
    echo "$tag"
}

build_leaflab() {
    local deps
    deps="$(build_deps)"
    say "docker build leaflab:latest on $deps"
    # The classic builder uses the local base as is (BuildKit would ask a registry).
    DOCKER_BUILDKIT=0 docker build --quiet -f "$HERE/Dockerfile" \
        --build-arg "DEPS_IMAGE=$deps" -t leaflab:latest "$ROOT" >/dev/null
    # Older bases (2 GB each) go once nothing needs them; dangling builds with them.
    docker images leaflab-deps --format '{{.Repository}}:{{.Tag}}' | grep -vxF "$deps" \
        | xargs -r docker rmi >/dev/null 2>&1 || true
    docker image prune -f >/dev/null 2>&1 || true
    echo "leaflab:latest"
}

for name in "${WANTED[@]}"; do
    case "$name" in
        postgres) build_postgres ;;
        redis) build_redis ;;
        leaflab) build_leaflab ;;
        *) say "unknown image '$name' (postgres, redis or leaflab)"; exit 2 ;;
    esac
done
