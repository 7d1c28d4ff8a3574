#!/usr/bin/env bash
# Build the Kubernetes binaries of the test cluster (kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet, kubectl; v1.20.2) and the sandbox's `pause`, once, from Debian's `kubernetes` source package,
# into a cache folder outside the clone:
#
#     scripts/k8s/build.sh            # -> ${FLYTELITE_K8S_CACHE:-$HOME/.cache/flytelite-k8s}/bin
#
# Installs the Debian packages the build and the cluster need when they are missing (Go, etcd, containerd,
# runc, the CNI plugins). The source comes through apt from Debian's deb-src archive, read with a private
# apt configuration in the cache folder (the host's sources are not edited). A run that finds every binary
# in place does nothing. Takes ~6 minutes on 2 cores (kube-apiserver alone ~3).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
. "$HERE/env.sh"

CACHE=$FLYTELITE_K8S_CACHE
BIN=$K8S_BIN
VERSION=1.20.2
ORIG=kubernetes_1.20.5+really$VERSION.orig.tar.gz
ORIG_SHA256=b83c0780efb182d928dc63d46488a847f161f04e40a94b96bf5247dd671ecdfc
COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

# Debian packages: the build (Go, reflect2 / json-iterator sources, a static libc for pause) and the cluster.
PACKAGES=(golang-go make rsync gcc libc6-dev
          golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev
          etcd-server containerd runc containernetworking-plugins openssl curl iproute2)
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q '^install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

all_built() {
    local c
    for c in "${COMMANDS[@]}" pause; do [ -x "$BIN/$c" ] || return 1; done
}
if all_built; then
    echo "Kubernetes $VERSION binaries already built in $BIN: nothing to do"
    exit 0
fi

T0=$(date +%s)
elapsed() { echo "+$(( $(date +%s) - T0 ))s"; }
mkdir -p "$CACHE/src" "$BIN"
SRC=$CACHE/src/kubernetes-$VERSION

# 1. The source package, through a private apt configuration that lists only deb-src entries made from the
#    host's own sources (deb822 .sources files and one-line .list files). The package caches are disabled
#    so the host's /var/cache/apt is left alone.
if [ ! -f "$CACHE/src/$ORIG" ]; then
    APT=$CACHE/apt
    rm -rf "$APT" && mkdir -p "$APT/sources.list.d" "$APT/lists/partial"
    : > "$APT/sources.list"
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && sed -E 's/^Types:.*/Types: deb-src/' "$f" > "$APT/sources.list.d/$(basename "$f")"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] && sed -nE 's/^deb[[:space:]]+/deb-src /p' "$f" >> "$APT/sources.list"
    done
    apt_opts=(-o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=$APT/sources.list.d"
              -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o APT::Sandbox::User=root)
    apt-get "${apt_opts[@]}" update -qq
    (cd "$CACHE/src" && apt-get "${apt_opts[@]}" source --download-only -qq kubernetes)
    echo "source package downloaded $(elapsed)"
fi
echo "$ORIG_SHA256  $CACHE/src/$ORIG" | sha256sum -c --quiet

export GOCACHE=$CACHE/gocache GOPATH=$CACHE/gopath GOPROXY=off GOFLAGS= GO111MODULE=off CGO_ENABLED=0

# 2. Unpack, patch and generate what the tarball lacks (once).
if [ ! -f "$SRC/pkg/generated/openapi/zz_generated.openapi.go" ]; then
    rm -rf "$SRC"
    tar xzf "$CACHE/src/$ORIG" -C "$CACHE/src"
    # The vendored reflect2 1.0.1 crashes under Go >= 1.18 (SIGSEGV in mapiterinit): use Debian's
    # reflect2 1.0.2 and json-iterator 1.1.12 sources instead.
    for d in modern-go/reflect2 json-iterator/go; do
        rm -rf "$SRC/vendor/github.com/$d" && mkdir -p "$SRC/vendor/github.com/$d"
        cp /usr/share/gocode/src/github.com/$d/*.go "$SRC/vendor/github.com/$d/"
        rm -f "$SRC/vendor/github.com/$d/"*_test.go
    done
    # The OpenAPI definitions the apiserver serves are generated, not shipped.
    (cd "$SRC" && env -u GOPATH -u GO111MODULE -u CGO_ENABLED make gen_openapi >/dev/null)
    echo "source unpacked, patched, OpenAPI generated $(elapsed)"
fi

# 3. The binaries, GOPATH-style (the tarball's vendor/ tree), stripped, with the version stamped in.
mkdir -p "$GOPATH/src/k8s.io"
ln -sfn "$SRC" "$GOPATH/src/k8s.io/kubernetes"
ldflags="-s -w"
for p in k8s.io/kubernetes/vendor/k8s.io/component-base/version k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
    ldflags+=" -X $p.gitVersion=v$VERSION -X $p.gitMajor=1 -X $p.gitMinor=20 -X $p.gitTreeState=clean"
done
for c in "${COMMANDS[@]}"; do
    [ -x "$BIN/$c" ] && { echo "$c already built"; continue; }
    (cd "$GOPATH/src/k8s.io/kubernetes" &&
        go build -p "${FLYTELITE_K8S_BUILD_JOBS:-2}" -ldflags "$ldflags" -o "$BIN/$c.tmp" "./cmd/$c")
    mv "$BIN/$c.tmp" "$BIN/$c"
    echo "built $c $(elapsed)"
done

# 4. The sandbox's pause process: Kubernetes' own pause.c, static.
gcc -Os -static -DVERSION=3.2-flytelite -o "$BIN/pause.tmp" "$SRC/build/pause/linux/pause.c"
strip "$BIN/pause.tmp" && mv "$BIN/pause.tmp" "$BIN/pause"

# The sources, Go's build cache and the module tree are no longer needed (~2 GB).
rm -rf "$SRC" "$GOCACHE" "$GOPATH" "$CACHE/apt"
echo "Kubernetes $VERSION built into $BIN in $(( $(date +%s) - T0 ))s"
