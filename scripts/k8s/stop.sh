#!/usr/bin/env bash
# Stop the test cluster start.sh started (by the pids in the state folder) and undo its traces on the host:
# pods and their containers, mounts (pod volumes, sandbox network namespaces, container root filesystems),
# the pod bridge, the kubelet's kubepods cgroups, the sysctls the kubelet and the CNI bridge changed, and the
# host folders they created (/var/log/pods, /var/log/containers, /var/lib/cni, /run/netns, /run/containerd).
# Keeps the state folder's keys, logs and containerd's images for the next start. Safe to run twice.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
. "$HERE/env.sh"

alive() { component_pid "$1" >/dev/null; }
stop_components() {  # NAME...: SIGTERM to all at once, SIGKILL to those still there after 10 s
    local name pid i left
    for name in "$@"; do pid=$(component_pid "$name") && kill "$pid" 2>/dev/null; done
    for i in $(seq 100); do
        left=(); for name in "$@"; do alive "$name" && left+=("$name"); done
        [ ${#left[@]} = 0 ] && break
        sleep 0.1
    done
    for name in "$@"; do
        pid=$(component_pid "$name") && { echo "$name ($pid) did not stop on SIGTERM: SIGKILL"; kill -9 "$pid"; }
        rm -f "$STATE/$name.pid"
    done
}
ctr_k8s() { ctr -a "$CONTAINERD_SOCK" -n k8s.io "$@"; }

# Pods first, while the kubelet still runs, so it stops their containers itself.
if alive apiserver && alive kubelet && [ -z "${FLYTELITE_K8S_KEEP_PODS:-}" ]; then
    "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" delete pods --all --all-namespaces \
        --grace-period=0 --force --wait=false >/dev/null 2>&1
    for i in $(seq 25); do
        [ -z "$(ctr_k8s tasks ls -q 2>/dev/null)" ] && break
        sleep 0.2
    done
fi
# The apiserver's clients, then the apiserver (it hangs on SIGTERM without etcd), then etcd.
stop_components kubelet controller-manager scheduler
stop_components apiserver
stop_components etcd

# Containers the kubelet left behind: kill their tasks (no shim or pause process may remain), then stop containerd.
if alive containerd && ctr -a "$CONTAINERD_SOCK" version >/dev/null 2>&1; then
    for t in $(ctr_k8s tasks ls -q); do ctr_k8s tasks kill -s KILL "$t" >/dev/null 2>&1; done
    for i in $(seq 25); do
        ctr_k8s tasks ls 2>/dev/null | awk 'NR > 1 && $3 != "STOPPED"' | grep -q . || break
        sleep 0.2
    done
    for t in $(ctr_k8s tasks ls -q); do ctr_k8s tasks delete -f "$t" >/dev/null 2>&1; done
    for c in $(ctr_k8s containers ls -q); do ctr_k8s containers delete "$c" >/dev/null 2>&1; done
fi
stop_components containerd

# Mounts the kubelet and containerd made (secret tmpfs, network namespaces, overlay root filesystems), deepest first.
mounts_under() {
    awk -v a="$STATE/" -v b="$K8S_RUN/" '{ if (index($2, a) == 1 || index($2, b) == 1 || $2 ~ "^/run/netns/cni-") print $2 }' /proc/self/mounts
}
mounts_under | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
left=$(mounts_under)
if [ -n "$left" ]; then
    echo "stop.sh: still mounted, their folders are kept:" >&2; echo "$left" >&2
else
    # The kubelet's pods and the cluster's data go; never while anything is mounted below them.
    rm -rf "$STATE/kubelet" "$STATE/etcd-data" "$STATE/cni/ipam"
    rm -f /run/netns/cni-*
fi
ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE"

# The kubelet's QoS cgroups (kubepods and below), leaves first.
for c in "${CGROUP_CONTROLLERS[@]}"; do
    d=/sys/fs/cgroup/$c/kubepods
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
    [ -d "$d" ] && echo "stop.sh: could not remove $d (processes still in it?)" >&2
done
# Sysctls back to what they were before start.sh, and the host folders that did not exist before it
# (containerd's shim sockets and runc state live under /run/containerd whatever its configured state; the
# kubelet writes pod logs to /var/log/pods). start.sh recorded both in $K8S_RUN.
if [ -f "$K8S_RUN/sysctl.orig" ]; then
    sysctl -q -p "$K8S_RUN/sysctl.orig"
fi
if [ -f "$K8S_RUN/paths.orig" ]; then
    while read -r p; do
        grep -q " $p/" /proc/self/mounts || rm -rf "$p"
    done < "$K8S_RUN/paths.orig"
fi
[ -z "$left" ] && rm -rf "$K8S_RUN"
echo "stopped (state kept in $STATE)"
