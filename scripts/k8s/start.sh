#!/usr/bin/env bash
# Start the single-node Kubernetes test cluster (v1.20.2, binaries from build.sh):
#   containerd (runc, CNI bridge) -> etcd -> kube-apiserver -> kubelet, kube-controller-manager, kube-scheduler,
# then import the images (images.sh). The control plane listens on 127.0.0.1; the kubelet on the node IP.
#
#     scripts/k8s/start.sh            # state in ${FLYTELITE_K8S_STATE:-/tmp/flytelite-k8s}
#     export KUBECONFIG=$FLYTELITE_K8S_STATE/admin.kubeconfig
#
# Returns once the node is Ready and untainted and the default service account has its token. etcd starts
# empty every time (a fresh cluster); keys, certificates and containerd's images are kept in the state folder.
# Running it again while the cluster runs does nothing. On a failure it prints the component's log, stops
# what it started (stop.sh) and exits 1. Logs: $FLYTELITE_K8S_STATE/logs; pids: $FLYTELITE_K8S_STATE/*.pid.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
. "$HERE/env.sh"
TIMEOUT=${FLYTELITE_K8S_START_TIMEOUT:-120}

T0=$(date +%s.%N)
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}s')" "$T0" "$(date +%s.%N)"; }
die() { echo "start.sh: $*" >&2; exit 1; }

for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl pause; do
    [ -x "$K8S_BIN/$c" ] || die "$K8S_BIN/$c is missing: run scripts/k8s/build.sh first"
done
for c in etcd containerd runc ctr curl openssl ip; do
    command -v $c >/dev/null || die "$c is not installed: run scripts/k8s/build.sh (it installs the Debian packages)"
done
[ -x /usr/lib/cni/bridge ] || die "the CNI plugins are missing: run scripts/k8s/build.sh"
[ "$(id -u)" = 0 ] || die "must run as root (containerd, the kubelet and the pod network need it)"

alive() { component_pid "$1" >/dev/null; }
running=(); for c in "${COMPONENTS[@]}"; do alive "$c" && running+=("$c"); done
if [ ${#running[@]} -eq ${#COMPONENTS[@]} ]; then
    echo "cluster already running (state $STATE)"
    echo "export KUBECONFIG=$KUBECONFIG_ADMIN"
    exit 0
elif [ ${#running[@]} -gt 0 ]; then
    die "partly running (${running[*]}): run scripts/k8s/stop.sh first"
fi
# $K8S_RUN exists while a cluster runs, and after one that was not stopped (killed, machine restarted
# without a reboot): then clean up after it first, with its own state folder.
if [ -d "$K8S_RUN" ]; then
    other=$(cat "$K8S_RUN/state-dir" 2>/dev/null || echo "$STATE")
    for c in "${COMPONENTS[@]}"; do
        (STATE=$other; alive "$c") && die "another test cluster runs (state $other): FLYTELITE_K8S_STATE=$other scripts/k8s/stop.sh"
    done
    echo "cleaning up after a test cluster that was not stopped (state $other)"
    FLYTELITE_K8S_STATE=$other "$HERE/stop.sh"
    [ -d "$K8S_RUN" ] && die "could not clean up $K8S_RUN (see above)"
fi
for port in $ETCD_PORT $ETCD_PEER_PORT $APISERVER_PORT $KUBELET_PORT $KUBELET_HEALTHZ_PORT $CONTROLLER_MANAGER_PORT $SCHEDULER_PORT; do
    ss -Hltn "sport = :$port" | grep -q . && die "port $port is taken (by another Kubernetes?)"
done
ip link show "$BRIDGE" >/dev/null 2>&1 && die "the network interface $BRIDGE exists: delete it (ip link delete $BRIDGE)"

# From here on, a failure stops whatever was started.
failed() {
    local status=$?
    trap - EXIT
    if [ $status -ne 0 ]; then
        echo "start.sh failed after $(elapsed); stopping what was started (logs stay in $STATE/logs)" >&2
        "$HERE/stop.sh" >&2 || true
    fi
    exit $status
}
trap failed EXIT

mkdir -p "$STATE/logs" "$STATE/cni/net.d"
for c in "${COMPONENTS[@]}"; do rm -f "$STATE/$c.pid"; done   # stale ones, from a cluster that died
# What the cluster changes outside $STATE, for stop.sh to undo: the host paths it creates and the sysctls it
# changes, recorded in $K8S_RUN (host-wide, so that whichever state folder's stop.sh runs finds them).
mkdir -p "$K8S_RUN.tmp"
for p in "${HOST_PATHS[@]}"; do [ -e "$p" ] || echo "$p"; done > "$K8S_RUN.tmp/paths.orig"
for s in "${SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done > "$K8S_RUN.tmp/sysctl.orig"
echo "$STATE" > "$K8S_RUN.tmp/state-dir"
mv "$K8S_RUN.tmp" "$K8S_RUN"

# ---- once per state folder: tokens, service-account keys, a small CA for the apiserver -> kubelet link
if [ ! -f "$STATE/tokens.csv" ]; then
    umask 077
    token() { openssl rand -hex 16; }
    cat > "$STATE/tokens.csv.tmp" <<T
$(token),admin,admin,"system:masters"
$(token),system:kube-controller-manager,controller-manager
$(token),system:kube-scheduler,scheduler
$(token),system:node:$NODE_NAME,kubelet,"system:nodes"
T
    openssl genrsa -out "$STATE/sa.key" 2048 2>/dev/null
    openssl rsa -in "$STATE/sa.key" -pubout -out "$STATE/sa.pub" 2>/dev/null
    # The kubelet accepts only clients with a certificate from this CA (no anonymous access); the apiserver
    # presents one to reach it (logs, exec).
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$STATE/ca.key" -out "$STATE/ca.crt" -days 3650 \
        -subj /CN=flytelite-k8s-ca 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout "$STATE/kubelet-client.key" -out "$STATE/kubelet-client.csr" \
        -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" 2>/dev/null
    openssl x509 -req -in "$STATE/kubelet-client.csr" -CA "$STATE/ca.crt" -CAkey "$STATE/ca.key" -CAcreateserial \
        -days 3650 -out "$STATE/kubelet-client.crt" 2>/dev/null
    mv "$STATE/tokens.csv.tmp" "$STATE/tokens.csv"
    umask 022
fi
token_of() { awk -F, -v u="$1" '$2 == u {print $1}' "$STATE/tokens.csv"; }
kubeconfig() {  # NAME USER: a token kubeconfig; the apiserver's self-signed certificate is its CA
    cat > "$STATE/$1.kubeconfig" <<K
apiVersion: v1
kind: Config
clusters:
- name: flytelite
  cluster: {server: "$APISERVER", certificate-authority: "$STATE/certs/apiserver.crt"}
users:
- name: $1
  user: {token: "$(token_of "$2")"}
contexts:
- name: flytelite
  context: {cluster: flytelite, user: $1, namespace: default}
current-context: flytelite
K
    chmod 600 "$STATE/$1.kubeconfig"
}
kubeconfig admin admin
kubeconfig controller-manager system:kube-controller-manager
kubeconfig scheduler system:kube-scheduler
kubeconfig kubelet "system:node:$NODE_NAME"

# The kubelet refuses a loopback node IP (and without a node address the apiserver cannot reach it for
# logs): use the host's primary address.
NODE_IP=${FLYTELITE_K8S_NODE_IP:-$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')}
NODE_IP=${NODE_IP:-$(hostname -I | awk '{print $1}')}
[ -n "$NODE_IP" ] || die "no non-loopback IPv4 address found for the node: set FLYTELITE_K8S_NODE_IP"

launch() {  # NAME COMMAND...: in a session of its own, output to logs/NAME.log, pid to NAME.pid
    local name=$1; shift
    setsid "$@" </dev/null >"$STATE/logs/$name.log" 2>&1 &
    echo $! > "$STATE/$name.pid"
}
show_log() {  # NAME: the component's last errors and the end of its log, without a Go stack dump
    local log=$STATE/logs/$1.log
    echo "--- last errors in $log:" >&2
    sed '/^goroutine [0-9]* \[/,$d' "$log" | grep -E '^[EF][0-9]{4} |level=(error|fatal)|"level":"(error|fatal)"' | tail -n 5 >&2
    echo "--- end of $log:" >&2
    sed '/^goroutine [0-9]* \[/,$d' "$log" | tail -n 15 >&2
}
exited() {  # NAME: launched, and gone since (or a zombie)
    local pid
    pid=$(cat "$STATE/$1.pid" 2>/dev/null) || return 1
    ! kill -0 "$pid" 2>/dev/null || [ "$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)" = Z ]
}
wait_for() {  # WHAT LOG COMMAND...: retry COMMAND until it succeeds; on timeout show LOG's tail and fail
    local what=$1 log=$2; shift 2
    local deadline=$(( $(date +%s) + TIMEOUT ))
    until "$@" >/dev/null 2>&1; do
        local c; for c in "${COMPONENTS[@]}"; do
            if exited "$c"; then
                echo "start.sh: $c exited while waiting for $what" >&2
                show_log "$c"; return 1
            fi
        done
        if [ "$(date +%s)" -ge $deadline ]; then
            echo "start.sh: $what not reached in ${TIMEOUT}s" >&2
            show_log "$log"; return 1
        fi
        sleep 0.2
    done
    printf '%-34s %s\n' "$what" "$(elapsed)"
}
api_get() { curl -sfk -H "Authorization: Bearer $(token_of admin)" "$APISERVER$1"; }

# ---- containerd: its own socket, root and state; cgroupfs; the sandbox image is the locally built pause
cat > "$STATE/containerd.toml" <<C
version = 2
root = "$STATE/containerd"
state = "$K8S_RUN/state"
[grpc]
  address = "$CONTAINERD_SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # Without CAP_SYS_RESOURCE runc cannot lower oom_score_adj (-998 for the sandbox) and every sandbox
  # fails ("can't get final child's PID from pipe"): never go below containerd's own value.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
C
# The pod network: a bridge with host-local addresses, no masquerade (there is no iptables).
cat > "$STATE/cni/net.d/10-flytelite.conflist" <<N
{"cniVersion": "0.4.0", "name": "flytelite-pods", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$STATE/cni/ipam", "ranges": [[{"subnet": "$POD_SUBNET"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}}]}
N
launch containerd containerd --config "$STATE/containerd.toml"

# ---- etcd: empty on every start
rm -rf "$STATE/etcd-data"
launch etcd etcd --name flytelite --data-dir "$STATE/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "flytelite=http://127.0.0.1:$ETCD_PEER_PORT"
wait_for "etcd healthy" etcd sh -c "curl -sf http://127.0.0.1:$ETCD_PORT/health | grep -q true"

# ---- kube-apiserver: token authentication, Node + RBAC authorization; writes its self-signed certificate
launch apiserver "$K8S_BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=0.0.0.0 --secure-port="$APISERVER_PORT" --advertise-address=127.0.0.1 --insecure-port=0 \
    --cert-dir="$STATE/certs" --token-auth-file="$STATE/tokens.csv" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$STATE/sa.pub" \
    --service-account-signing-key-file="$STATE/sa.key" --service-cluster-ip-range="$SERVICE_SUBNET" \
    --kubelet-preferred-address-types=InternalIP --allow-privileged=true \
    --kubelet-client-certificate="$STATE/kubelet-client.crt" --kubelet-client-key="$STATE/kubelet-client.key"
wait_for "containerd up" containerd ctr -a "$CONTAINERD_SOCK" version
wait_for "apiserver certificate" apiserver test -f "$STATE/certs/apiserver.crt"

# ---- kubelet: remote CRI (containerd), cgroupfs (cgroup v1, no systemd), no iptables, no swap check
cat > "$STATE/kubelet.yaml" <<K
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: "$STATE/ca.crt"}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
failSwapOn: false
makeIPTablesUtilChains: false
clusterDomain: cluster.local
# 1.20 sends its fast first status update only with a podCIDR: without this, Ready lags ~10 s.
nodeStatusUpdateFrequency: 1s
nodeStatusReportFrequency: 1m
# The default 5 QPS throttles status updates when several pods start at once.
kubeAPIQPS: 50
kubeAPIBurst: 100
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
K
launch kubelet "$K8S_BIN/kubelet" --config="$STATE/kubelet.yaml" --kubeconfig="$STATE/kubelet.kubeconfig" \
    --root-dir="$STATE/kubelet" --cert-dir="$STATE/kubelet/pki" \
    --container-runtime=remote --container-runtime-endpoint="unix://$CONTAINERD_SOCK" \
    --pod-infra-container-image="$PAUSE_IMAGE" \
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --v="${FLYTELITE_K8S_KUBELET_V:-1}"
wait_for "apiserver ready" apiserver sh -c "curl -sfk -H 'Authorization: Bearer $(token_of admin)' $APISERVER/readyz | grep -q ok"

# ---- controller-manager (its controllers start throttled at 20 QPS: raise it) and scheduler
launch controller-manager "$K8S_BIN/kube-controller-manager" --kubeconfig="$STATE/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$CONTROLLER_MANAGER_PORT" --port=0 --leader-elect=false \
    --service-account-private-key-file="$STATE/sa.key" --root-ca-file="$STATE/certs/apiserver.crt" \
    --use-service-account-credentials=true --kube-api-qps=200 --kube-api-burst=400
launch scheduler "$K8S_BIN/kube-scheduler" --kubeconfig="$STATE/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" --port=0 --leader-elect=false
wait_for "scheduler healthy" scheduler sh -c "curl -sfk https://127.0.0.1:$SCHEDULER_PORT/healthz | grep -q ok"
wait_for "controller-manager healthy" controller-manager \
    sh -c "curl -sfk https://127.0.0.1:$CONTROLLER_MANAGER_PORT/healthz | grep -q ok"
wait_for "default service account token" controller-manager \
    sh -c "curl -sfk -H 'Authorization: Bearer $(token_of admin)' $APISERVER/api/v1/namespaces/default/serviceaccounts/default | grep -q '\"secrets\"'"
node_ready() {
    api_get "/api/v1/nodes/$NODE_NAME" | python3 -c '
import json, sys
node = json.load(sys.stdin)
ready = any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))
sys.exit(0 if ready and not node["spec"].get("taints") else 1)'
}
wait_for "node Ready, no taints" kubelet node_ready

# ---- images (pause for the sandboxes, the task image)
"$HERE/images.sh"
trap - EXIT
echo "cluster ready in $(elapsed) (node $NODE_NAME at $NODE_IP, state $STATE)"
echo "export KUBECONFIG=$KUBECONFIG_ADMIN"
