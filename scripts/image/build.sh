#!/usr/bin/env bash
# flytelite's OCI images, without Docker or a registry (docs/image.md), written to dist/images/:
#   localhost/flytelite:VERSION           the server (entrypoint flytelite, cmd start --host 0.0.0.0: a
#                                         container's loopback is its own)
#   localhost/flytelite-flytekit:VERSION  the default task image: flytekit, pyflyte-execute and flytelite's task
#                                         helpers, working folder /root as flytekit's images have it
# Both are one layer, the same root filesystem: Debian from mmdebstrap with a venv at /opt/flytelite installed
# from wheels this machine builds with the project's venv (the dependencies' first: that base is cached by their
# wheels; then flytelite's own). The same packages and wheels give the same digests.
#
#   build.sh [--no-cache] [--fresh-rootfs] [--out DIR]
#     --no-cache      build the wheels and the root filesystem again (and cache them)
#     --fresh-rootfs  build the root filesystem again from the cached wheels and leave the cache as it is (the
#                     reproducibility test compares the result with the cached one)
#
# What is slow is cached outside the clone, in ${FLYTELITE_IMAGE_CACHE:-~/.cache/flytelite-image}: the wheels
# (keyed by pyproject.toml, README.md and flytelite/), the base root filesystem (keyed by everything it is made
# of, the dependencies' wheels among it, but not Debian's archive: --no-cache picks up its security updates)
# and the root filesystem with flytelite (keyed by the base and flytelite's wheel); only the latest of each is
# kept. A change to flytelite alone rebuilds only the last.
# FLYTELITE_IMAGE_MIRROR, when set, is mmdebstrap's MIRROR argument.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

SUITE=bookworm
SUITE_PYTHON=3.11  # bookworm's python3: the wheels must be built for it
PACKAGES=python3,python3-venv,ca-certificates,libstdc++6  # libstdc++6: grpcio's wheel links it
# dpkg leaves out documentation (copyright notices excepted), manual pages and translations.
DPKG_OPTS=(--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
           --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
           --dpkgopt='path-exclude=/usr/share/locale/*')
VENV_BIN=/opt/flytelite/bin
ENV=(--env "PATH=$VENV_BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" --env LANG=C.UTF-8)
# Every time stamp in the images: mmdebstrap clamps to it, setuptools dates the wheel's files with it, and
# under it py_compile writes hash-based .pyc files.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-0}
CACHE=${FLYTELITE_IMAGE_CACHE:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache/flytelite-image}
BUILD_PYTHON=${BUILD_PYTHON:-$ROOT/.venv/bin/python}

no_cache='' fresh_rootfs='' out=$ROOT/dist/images
while [ $# -gt 0 ]; do
    case $1 in
        --no-cache) no_cache=1 ;;
        --fresh-rootfs) fresh_rootfs=1 ;;
        --out) out=$2; shift ;;
        *) echo "usage: build.sh [--no-cache] [--fresh-rootfs] [--out DIR]" >&2; exit 2 ;;
    esac
    shift
done

fail() { echo "build.sh: $*" >&2; exit 1; }
command -v mmdebstrap >/dev/null || fail "mmdebstrap is missing (Debian's package mmdebstrap)"
[ "$(dpkg --print-architecture)" = amd64 ] || fail "mkimage.py writes amd64 images; this machine is $(dpkg --print-architecture)"
[ -x "$BUILD_PYTHON" ] || fail "$BUILD_PYTHON is missing: run make .venv/.installed, or set BUILD_PYTHON"
host_python=$("$BUILD_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$host_python" = "$SUITE_PYTHON" ] || fail "$BUILD_PYTHON is Python $host_python, Debian $SUITE's python3 is" \
    "$SUITE_PYTHON: its wheels would not fit the image; set BUILD_PYTHON to a Python $SUITE_PYTHON venv's python"
VERSION=$("$BUILD_PYTHON" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' \
    "$ROOT/pyproject.toml")
T0=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$CACHE/wheels" "$CACHE/rootfs" "$out"

# Keep only $2 among the entries of folder $1.
keep_only() { find "$1" -mindepth 1 -maxdepth 1 ! -name "$2" -exec rm -rf {} +; }

# The wheels of flytelite and of every dependency, as `pip wheel .` resolves them.
sources=(pyproject.toml README.md flytelite)
wheels_key=$(cd "$ROOT" && { echo "$host_python"; find "${sources[@]}" -type f ! -path '*/__pycache__/*' -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-16)
wheels=$CACHE/wheels/$wheels_key
if [ -n "$no_cache" ] || [ ! -d "$wheels" ]; then
    echo "build.sh: building the wheels"
    # From a copy: pip builds in the tree it is given, and a checkout's build/ may keep files its sources no
    # longer have.
    mkdir "$work/src"
    (cd "$ROOT" && cp -r "${sources[@]}" "$work/src/")
    find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
    "$BUILD_PYTHON" -m pip wheel --quiet --disable-pip-version-check -w "$work/wheels" "$work/src"
    rm -rf "$wheels"
    mv "$work/wheels" "$wheels"
    keep_only "$CACHE/wheels" "$wheels_key"
fi

own=$(cd "$wheels" && ls flytelite-"$VERSION"-*.whl)
base_key=$({ echo "$SUITE $PACKAGES ${DPKG_OPTS[*]} ${FLYTELITE_IMAGE_MIRROR:-} $SOURCE_DATE_EPOCH"
             (cd "$wheels" && sha256sum $(ls ./*.whl | grep -v "/$own\$")); cat "$HERE/build.sh" "$HERE/customize.sh"; } |
           sha256sum | cut -c1-16)
base=$CACHE/rootfs/base-$base_key.tar
if [ -n "$no_cache$fresh_rootfs" ] || [ ! -f "$base" ]; then
    echo "build.sh: building the base root filesystem (Debian $SUITE and the dependencies' venv)"
    mkdir "$work/deps"
    (cd "$wheels" && cp $(ls ./*.whl | grep -v "/$own\$") "$work/deps/")
    FLYTELITE_WHEELHOUSE=$work/deps FLYTELITE_IMAGE_PYTHON=$SUITE_PYTHON \
        mmdebstrap --quiet --variant=essential --include="$PACKAGES" "${DPKG_OPTS[@]}" \
        --customize-hook="$HERE/customize.sh" "$SUITE" "$work/base.tar" ${FLYTELITE_IMAGE_MIRROR:+"$FLYTELITE_IMAGE_MIRROR"}
    if [ -n "$fresh_rootfs" ]; then
        base=$work/base.tar
    else
        mv "$work/base.tar" "$base"
        keep_only "$CACHE/rootfs" "base-$base_key.tar"
    fi
fi

rootfs_key=$({ echo "$base_key"; sha256sum "$wheels/$own" | cut -d' ' -f1; } | sha256sum | cut -c1-16)
rootfs=$CACHE/rootfs/$rootfs_key.tar
if [ -n "$no_cache$fresh_rootfs" ] || [ ! -f "$rootfs" ]; then
    echo "build.sh: adding flytelite to the base root filesystem"
    mkdir "$work/root" "$work/own"
    tar -xpf "$base" --numeric-owner --xattrs --xattrs-include='*' -C "$work/root"
    cp "$wheels/$own" "$work/own/"
    FLYTELITE_WHEELHOUSE=$work/own FLYTELITE_IMAGE_PYTHON=$SUITE_PYTHON "$HERE/customize.sh" "$work/root"
    # In name order, owners by number: the same files give the same tar whatever machine unpacked them.
    tar -cf "$work/rootfs.tar" --sort=name --numeric-owner --xattrs --xattrs-include='*' \
        --pax-option=delete=atime,delete=ctime -C "$work/root" .
    rm -rf "$work/root"
    if [ -n "$fresh_rootfs" ]; then
        rootfs=$work/rootfs.tar
    else
        mv "$work/rootfs.tar" "$rootfs"
        find "$CACHE/rootfs" -mindepth 1 -maxdepth 1 ! -name "base-$base_key.tar" ! -name "$rootfs_key.tar" -delete
    fi
fi

MKIMAGE=(python3 "$HERE/mkimage.py")
image() {  # NAME FILE [mkimage options]: write the image, print its reference, digest and size
    local name=$1 file=$out/$2 made
    shift 2
    made=$("${MKIMAGE[@]}" "$name" "$file" --rootfs "$rootfs" "${ENV[@]}" "$@")
    printf '%-38s %s %4s MB  %s\n' "$name" "$(cut -d' ' -f2 <<<"$made")" "$(($(stat -c %s "$file") >> 20))" "$file"
}
image "localhost/flytelite:$VERSION" "flytelite-$VERSION.tar" --entrypoint '["flytelite"]' --cmd '["start", "--host", "0.0.0.0"]' --workdir /root
image "localhost/flytelite-flytekit:$VERSION" "flytelite-flytekit-$VERSION.tar" --workdir /root
echo "build.sh: done in $(($(date +%s) - T0))s"
