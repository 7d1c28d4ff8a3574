#!/usr/bin/env bash
# Build the test cluster's images and import them into its containerd (namespace k8s.io); no registry:
#   localhost/flytelite-pause:3.2   the pod sandbox: Kubernetes' pause.c, static (built by build.sh)
#   localhost/flytelite-task:v1     a skeleton (merged-/usr symlinks, /etc/passwd, /tmp) whose pods
#                                   hostPath-mount the host's /usr and any Python environment they run
#   localhost/flytelite-spark:v1    the skeleton with spark-entrypoint.sh as its entrypoint and /root as its
#                                   working folder, as flytekit's images have it: the image of
#                                   Spark's driver and executor pods (Spark and Java through the same mounts)
# start.sh runs it; run it again to re-import into a running cluster. Pods use imagePullPolicy: Never.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
. "$HERE/env.sh"

[ -x "$K8S_BIN/pause" ] || { echo "images.sh: $K8S_BIN/pause is missing: run scripts/k8s/build.sh" >&2; exit 1; }
ctr -a "$CONTAINERD_SOCK" version >/dev/null 2>&1 || {
    echo "images.sh: containerd is not running at $CONTAINERD_SOCK: run scripts/k8s/start.sh" >&2; exit 1; }
T0=$(date +%s.%N)
OUT=$STATE/images
mkdir -p "$OUT"
MKIMAGE=(python3 "$HERE/../image/mkimage.py")

"${MKIMAGE[@]}" "$PAUSE_IMAGE" "$OUT/pause.tar" --file "pause:$K8S_BIN/pause:0755" --entrypoint '["/pause"]' >/dev/null

skeleton=(--dir usr --dir etc --dir proc --dir sys --dir dev --dir root:0700 --dir tmp:1777 --dir var/tmp:1777
          --symlink bin:usr/bin --symlink sbin:usr/sbin --symlink lib:usr/lib --symlink lib64:usr/lib64
          --text 'etc/passwd:root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n'
          --text 'etc/group:root:x:0:\nnogroup:x:65534:\n')
"${MKIMAGE[@]}" "$TASK_IMAGE" "$OUT/task.tar" "${skeleton[@]}" --env LANG=C.UTF-8 --cmd '["/usr/bin/python3"]' >/dev/null

# The entrypoint lives outside /usr, which the pods mount from the host over the image's own.
"${MKIMAGE[@]}" "$SPARK_IMAGE" "$OUT/spark.tar" "${skeleton[@]}" --dir opt --file "opt/entrypoint.sh:$HERE/spark-entrypoint.sh:0755" \
    --env LANG=C.UTF-8 --workdir /root --entrypoint '["/opt/entrypoint.sh"]' >/dev/null

for archive in pause task spark; do
    ctr -a "$CONTAINERD_SOCK" -n k8s.io images import "$OUT/$archive.tar" >/dev/null
done
echo "images $PAUSE_IMAGE $TASK_IMAGE $SPARK_IMAGE imported in $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}s')" "$T0" "$(date +%s.%N)")"
