#!/usr/bin/env bash
# Starts a single-node Kubernetes cluster from what .ci/k8s/build.sh put in
# the cache: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# containerd (runc, the bridge CNI plugin) and a kubelet, each a process of
# this machine writing its log under STATE/logs. etcd, the API server, the
# controller manager and the scheduler listen on 127.0.0.1; the kubelet on
# the node's address (Kubernetes refuses a loopback node IP; the API server
# reaches the kubelet there for exec and logs). Certificates are made
# anew for each cluster. The sandbox and busybox images are imported into
# containerd; pods must use images already there (no registry is needed).
# Not set up: kube-proxy, Service cluster IPs, cluster DNS.
#
# Usage: .ci/k8s/start.sh STATE   (an empty or new directory)
#   Writes STATE/admin.kubeconfig; waits until the node is Ready and the
#   default service account exists, or fails (with the logs' tails) after
#   JOULEBENCH_K8S_START_TIMEOUT seconds (default 180).
# Facts this relies on: root without CAP_SYS_RESOURCE needs containerd's
# restrict_oom_score_adj (else runc fails "can't get final child's PID from
# pipe"); a cgroup v1 host needs the kubelet's failCgroupV1: false; the API
# server must stop before etcd (stop.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"
S=${1:?usage: start.sh STATE}
mkdir -p "$S"
S="$(cd "$S" && pwd)"
B=$cache/bin
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
	[ -x "$B/$b" ] || die "$B/$b missing: run .ci/k8s/build.sh first"
done
command -v containerd >/dev/null || die "containerd missing: run .ci/k8s/build.sh first"
timeout_s=${JOULEBENCH_K8S_START_TIMEOUT:-180}
mkdir -p "$S/logs" "$S/pki" "$S/cni" "$S/containerd" "$S/pod-logs"
node_ip=$(ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -n 1)
[ -n "$node_ip" ] || die "no global IPv4 address for the node"
host=$(hostname | tr 'A-Z' 'a-z')
start=$SECONDS

fail() {
	echo "k8s: $*" >&2
	for l in "$S"/logs/*.log; do echo "--- $l (tail)" >&2; tail -n 15 "$l" >&2; done
	"$here/stop.sh" "$S" || true
	exit 1
}

# ---- certificates: a CA, the API server's serving certificate, client
# certificates for the admin, the API server (to the kubelet) and the node,
# the kubelet's serving certificate, and the service-account key pair.
(
	cd "$S/pki"
	o() { openssl "$@" 2>/dev/null; }
	o req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj "/CN=joulebench-ci-ca"
	cert() { # name subject extensions
		printf '%b' "$3" >"$1.ext"
		o req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
		o x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 30 -extfile "$1.ext"
	}
	cert apiserver "/CN=kube-apiserver" "subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.0.0.1,IP:$node_ip\nextendedKeyUsage=serverAuth\n"
	cert admin "/O=system:masters/CN=admin" "extendedKeyUsage=clientAuth\n"
	cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth\n"
	cert node "/O=system:nodes/CN=system:node:$host" "extendedKeyUsage=clientAuth\n"
	cert kubelet "/CN=$host" "subjectAltName=DNS:$host,DNS:localhost,IP:127.0.0.1,IP:$node_ip\nextendedKeyUsage=serverAuth\n"
	o genrsa -out sa.key 2048
	o rsa -in sa.key -pubout -out sa.pub
)
P=$S/pki
kubeconfig() { # file cert
	cat >"$1" <<K
apiVersion: v1
kind: Config
clusters: [{name: ci, cluster: {server: "https://127.0.0.1:${JOULEBENCH_K8S_API_PORT:-6443}", certificate-authority: "$P/ca.crt"}}]
users: [{name: u, user: {client-certificate: "$P/$2.crt", client-key: "$P/$2.key"}}]
contexts: [{name: ci, context: {cluster: ci, user: u}}]
current-context: ci
K
}
kubeconfig "$S/admin.kubeconfig" admin
kubeconfig "$S/node.kubeconfig" node
port=${JOULEBENCH_K8S_API_PORT:-6443}
etcd_port=${JOULEBENCH_K8S_ETCD_PORT:-2379}

bg() { # name command...: start in the background, PID in STATE/NAME.pid
	local n=$1; shift
	"$@" >"$S/logs/$n.log" 2>&1 &
	echo $! >"$S/$n.pid"
}
bg etcd "$B/etcd" --data-dir "$S/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
	--advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
	--initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 1))" --initial-cluster "default=http://127.0.0.1:$((etcd_port + 1))" \
	--listen-metrics-urls "http://127.0.0.1:$((etcd_port + 2))"
bg apiserver "$B/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" --bind-address 127.0.0.1 --advertise-address "$node_ip" \
	--secure-port "$port" --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" --client-ca-file "$P/ca.crt" \
	--service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa.key" \
	--service-account-issuer https://kubernetes.default.svc.cluster.local --service-cluster-ip-range 10.0.0.0/24 \
	--authorization-mode Node,RBAC --kubelet-client-certificate "$P/kubelet-client.crt" --kubelet-client-key "$P/kubelet-client.key" \
	--kubelet-certificate-authority "$P/ca.crt" --kubelet-preferred-address-types InternalIP --cert-dir "$S/apiserver-certs"

# containerd, while the API server starts.
cat >"$S/containerd.toml" <<C
version = 2
root = "$S/containerd/root"
state = "$S/containerd/state"
[grpc]
  address = "$S/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/library/pause:local"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$cache/root/usr/bin/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$cache/root/usr/lib/cni"
    conf_dir = "$S/cni"
C
cat >"$S/cni/10-bridge.conflist" <<'N'
{"cniVersion": "0.4.0", "name": "joulebench-ci", "plugins": [
  {"type": "bridge", "bridge": "jbci0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "loopback"}]}
N
bg containerd containerd --config "$S/containerd.toml"
sock=$S/containerd/containerd.sock
until ctr -a "$sock" version >/dev/null 2>&1; do
	[ $((SECONDS - start)) -lt "$timeout_s" ] || fail "containerd did not start in ${timeout_s}s"
	sleep 0.2
done
for i in pause busybox; do
	ctr -a "$sock" -n k8s.io images import --base-name "docker.io/library/$i" "$cache/images/$i.tar" >/dev/null ||
		fail "importing the $i image"
done

K="$B/kubectl --kubeconfig $S/admin.kubeconfig"
until $K get --raw /readyz >/dev/null 2>&1; do
	[ $((SECONDS - start)) -lt "$timeout_s" ] || fail "the API server was not ready in ${timeout_s}s"
	sleep 0.3
done
common=(--kubeconfig "$S/admin.kubeconfig" --authentication-kubeconfig "$S/admin.kubeconfig"
	--authorization-kubeconfig "$S/admin.kubeconfig" --bind-address 127.0.0.1 --leader-elect=false)
bg controller-manager "$B/kube-controller-manager" "${common[@]}" --use-service-account-credentials \
	--service-account-private-key-file "$P/sa.key" --root-ca-file "$P/ca.crt" --controllers '*,-nodeipam'
bg scheduler "$B/kube-scheduler" "${common[@]}"
cat >"$S/kubelet.yaml" <<L
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_ip
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$sock
failSwapOn: false
failCgroupV1: false
tlsCertFile: $P/kubelet.crt
tlsPrivateKeyFile: $P/kubelet.key
podLogsDir: $S/pod-logs
resolvConf: /etc/resolv.conf
imageGCHighThresholdPercent: 100
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
L
bg kubelet "$B/kubelet" --config "$S/kubelet.yaml" --kubeconfig "$S/node.kubeconfig" --root-dir "$S/kubelet" \
	--node-ip "$node_ip" --hostname-override "$host"
until $K get serviceaccount default >/dev/null 2>&1 && $K wait --for=condition=Ready node --all --timeout=1s >/dev/null 2>&1; do
	[ $((SECONDS - start)) -lt "$timeout_s" ] || fail "the node was not Ready in ${timeout_s}s"
	sleep 0.5
done
say "cluster up in $((SECONDS - start)) s: kubeconfig $S/admin.kubeconfig"
