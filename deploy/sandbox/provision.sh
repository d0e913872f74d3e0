#!/bin/sh
# Final touches shared by both recipes (run as root inside the image/rootfs):
# the unprivileged sandbox user and the workspace mount point.
set -eu
if ! getent group sandbox >/dev/null; then groupadd --gid 10001 sandbox; fi
if ! getent passwd sandbox >/dev/null; then
    useradd --uid 10001 --gid 10001 --home-dir /tmp --no-create-home --shell /bin/sh sandbox
fi
mkdir -p /workspace
chown 10001:10001 /workspace
# Fail the build here, not at the first exec, if a library is missing.
python3 -c "import numpy, scipy, sympy, matplotlib, pandas, control; print('sandbox libs ok')"
