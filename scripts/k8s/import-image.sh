#!/usr/bin/env bash
# Import OCI image archives (make image writes them to dist/images/) into the running test cluster's containerd,
# namespace k8s.io, where its kubelet finds them; pods then use them with imagePullPolicy: Never.
#   scripts/k8s/import-image.sh ARCHIVE...
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
. "$HERE/env.sh"

[ $# -gt 0 ] || { echo "usage: import-image.sh ARCHIVE..." >&2; exit 2; }
ctr -a "$CONTAINERD_SOCK" version >/dev/null 2>&1 || {
    echo "import-image.sh: containerd is not running at $CONTAINERD_SOCK: run scripts/k8s/start.sh" >&2; exit 1; }
for archive in "$@"; do
    ctr -a "$CONTAINERD_SOCK" -n k8s.io images import "$archive"
done
