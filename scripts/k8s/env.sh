# Settings shared by the test cluster's scripts (sourced, not run). Every one can be set in the environment.
# Only one such cluster runs on a host at a time: the kubelet's /var/log/pods, its kubepods cgroups and the
# ports below are host-wide.

# Binaries (build.sh) and image archives (images.sh): built once, kept between runs.
FLYTELITE_K8S_CACHE=${FLYTELITE_K8S_CACHE:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache/flytelite-k8s}
K8S_BIN=$FLYTELITE_K8S_CACHE/bin
# The cluster's state: keys, tokens, kubeconfigs, logs, pids, etcd's data, containerd's images, the kubelet's folder.
FLYTELITE_K8S_STATE=${FLYTELITE_K8S_STATE:-/tmp/flytelite-k8s}
STATE=$FLYTELITE_K8S_STATE
# containerd's socket and runtime state (a unix socket path must stay short, so not under $STATE).
K8S_RUN=/run/flytelite-k8s
CONTAINERD_SOCK=$K8S_RUN/containerd.sock
KUBECONFIG_ADMIN=$STATE/admin.kubeconfig

NODE_NAME=${FLYTELITE_K8S_NODE:-flytelite-node}
ETCD_PORT=12379
ETCD_PEER_PORT=12380
APISERVER_PORT=16443
KUBELET_PORT=20250
KUBELET_HEALTHZ_PORT=20248
CONTROLLER_MANAGER_PORT=20257
SCHEDULER_PORT=20259
APISERVER=https://127.0.0.1:$APISERVER_PORT
BRIDGE=flytelite0
POD_SUBNET=${FLYTELITE_K8S_POD_SUBNET:-10.244.0.0/24}
SERVICE_SUBNET=10.0.0.0/24

# Images the cluster uses (images.sh builds and imports them; no registry anywhere).
PAUSE_IMAGE=localhost/flytelite-pause:3.2
TASK_IMAGE=localhost/flytelite-task:v1
SPARK_IMAGE=localhost/flytelite-spark:v1

# The components start.sh starts, in order.
COMPONENTS=(containerd etcd apiserver kubelet controller-manager scheduler)
# Host paths the kubelet (pod logs, its device-plugin socket), containerd (shim sockets, runc state), the CNI
# plugins (results cache, network namespaces) and mount(8) create outside $STATE whatever their settings;
# stop.sh removes those that did not exist before start.sh.
HOST_PATHS=(/var/log/pods /var/log/containers /var/lib/kubelet /var/lib/cni /run/netns /run/containerd /run/mount)
# System-wide settings the kubelet (vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1, ...)
# and the CNI bridge (net.ipv4.ip_forward=1) change; start.sh records them, stop.sh puts them back.
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys
         kernel.keys.root_maxbytes net.ipv4.ip_forward)
# The cgroup hierarchies the kubelet makes a kubepods cgroup in (cgroup v1 controllers and the unified one).
CGROUP_CONTROLLERS=(cpu cpuacct cpuset memory devices freezer blkio pids hugetlb net_cls net_prio perf_event rdma misc
                    systemd unified)

# The pid of a running component (from $STATE/NAME.pid), or failure: only a live process (not a zombie
# waiting to be reaped) whose command line names this state folder counts, never a recycled pid.
component_pid() {
    local pid
    pid=$(cat "$STATE/$1.pid" 2>/dev/null) && [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
    [ "$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)" != Z ] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF "$STATE/" || return 1
    echo "$pid"
}
