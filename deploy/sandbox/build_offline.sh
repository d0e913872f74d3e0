#!/usr/bin/env bash
# Build the sandbox image without any image registry: Debian packages via
# debootstrap, python-control via pip inside the chroot, then `docker import`.
#
#   deploy/sandbox/build_offline.sh IMAGE_TAG [ROOTFS_DIR]
#
# Needs root (debootstrap, chroot) and a reachable Debian mirror (MIRROR,
# default http://deb.debian.org/debian) and PyPI. ROOTFS_DIR is kept when
# given (the bwrap backend can use it as its root); otherwise a temp dir is
# used and removed.
set -euo pipefail
IMAGE="${1:?usage: build_offline.sh IMAGE_TAG [ROOTFS_DIR]}"
HERE="$(cd "$(dirname "$0")" && pwd)"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
SUITE="${SUITE:-bookworm}"
KEEP_ROOTFS=1
ROOTFS="${2:-}"
if [ -z "$ROOTFS" ]; then
    ROOTFS="$(mktemp -d /var/tmp/leaflab-sandbox-rootfs.XXXXXX)"
    KEEP_ROOTFS=0
fi
cleanup() {
    for m in proc dev/pts; do umount -l "$ROOTFS/$m" 2>/dev/null || true; done
    if [ "$KEEP_ROOTFS" = "0" ]; then rm -rf "$ROOTFS"; fi
}
trap cleanup EXIT

if ! command -v debootstrap >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2
fi
packages="$(grep -v '^#' "$HERE/debian-packages.txt" | grep -v '^\s*$' | paste -sd, -)"
# debootstrap is the slow part (minutes): a kept ROOTFS from an earlier run with
# the same package list is reused, so only the later steps run again.
stamp="$ROOTFS/.leaflab-debootstrap-$(echo "$SUITE $packages" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    echo "build_offline: debootstrap $SUITE -> $ROOTFS" >&2
    rm -rf "$ROOTFS" && mkdir -p "$ROOTFS"
    debootstrap --variant=minbase --include="$packages" "$SUITE" "$ROOTFS" "$MIRROR" >&2
    touch "$stamp"
fi

# PyPI packages are downloaded by the host's pip (which knows the host's proxy
# and CA setup) and installed inside the chroot without any network.
echo "build_offline: pip install $(grep -v '^#' "$HERE/pip-requirements.txt" | xargs)" >&2
wheels="$ROOTFS/tmp/leaflab-wheels"
rm -rf "$wheels" && mkdir -p "$wheels"
grep -v '^#' "$HERE/pip-requirements.txt" | xargs ${PIP:-python3 -m pip} download \
    --no-deps --only-binary=:all: --dest "$wheels" >&2
mount -t proc proc "$ROOTFS/proc"
grep -v '^#' "$HERE/pip-requirements.txt" | xargs chroot "$ROOTFS" python3 -m pip install \
    --no-cache-dir --no-deps --no-index --find-links /tmp/leaflab-wheels \
    --break-system-packages >&2
rm -rf "$wheels"
cp "$HERE/provision.sh" "$ROOTFS/usr/local/sbin/leaflab-provision"
chroot "$ROOTFS" sh /usr/local/sbin/leaflab-provision >&2
umount -l "$ROOTFS/proc"
# The image must not carry the build host's resolver or apt caches.
: >"$ROOTFS/etc/resolv.conf"
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
# The stamp stays in the kept ROOTFS but must not end up in the image.
tar_exclude="--exclude=./.leaflab-debootstrap-*"

echo "build_offline: docker import $IMAGE" >&2
tar -C "$ROOTFS" "$tar_exclude" -c . | docker import \
    --change 'ENV HOME=/tmp MPLBACKEND=Agg MPLCONFIGDIR=/tmp/.matplotlib PYTHONDONTWRITEBYTECODE=1 LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'USER 10001:10001' \
    --change 'WORKDIR /workspace' \
    --change 'CMD ["sleep", "infinity"]' \
    --change 'LABEL org.leaflab.recipe=offline' \
    - "$IMAGE" >&2
echo "$IMAGE"
