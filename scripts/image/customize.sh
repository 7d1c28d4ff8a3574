#!/bin/sh
# mmdebstrap's --customize-hook for build.sh, run with the root filesystem's folder as $1: installs every wheel
# in $FLYTELITE_WHEELHOUSE (no index, no dependencies looked up) into a venv at /opt/flytelite, made if missing,
# then removes what would differ between the machines that build it. build.sh runs it twice: in mmdebstrap with
# the dependencies' wheels (the base, cached by those wheels), then on the base unpacked with flytelite's own.
set -eu
ROOTFS=$1

# Inside the chroot: a clean environment. SOURCE_DATE_EPOCH makes pip write hash-based .pyc files (no
# time stamps in them) and PYTHONHASHSEED=0 fixes the order of the sets marshalled into them.
in_chroot() {
    chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1 "$@"
}

found=$(in_chroot python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$found" != "$FLYTELITE_IMAGE_PYTHON" ]; then
    echo "customize.sh: the image's python3 is $found, the wheels are for $FLYTELITE_IMAGE_PYTHON" >&2
    exit 1
fi

cp -r "$FLYTELITE_WHEELHOUSE" "$ROOTFS/tmp/wheelhouse"
[ -x "$ROOTFS/opt/flytelite/bin/python" ] || in_chroot python3 -m venv /opt/flytelite
in_chroot sh -c 'exec /opt/flytelite/bin/pip install --quiet --no-index --no-deps --no-cache-dir \
    --disable-pip-version-check --root-user-action=ignore /tmp/wheelhouse/*.whl'
rm -rf "$ROOTFS/tmp/wheelhouse"

# The build machine's name, resolver and apt mirror: a container gets the first two from its runtime, and
# the image has no apt.
rm -f "$ROOTFS/etc/hostname" "$ROOTFS/etc/resolv.conf" "$ROOTFS/etc/apt/sources.list"
