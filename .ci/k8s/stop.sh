#!/usr/bin/env bash
# Stops the cluster start.sh started in STATE: its processes by the PIDs it
# recorded (the kubelet and the control plane first, the API server before
# etcd: it hangs on SIGTERM once etcd is gone), then the containers
# containerd still runs, and unmounts what the kubelet mounted.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"
S=${1:?usage: stop.sh STATE}
[ -d "$S" ] || exit 0
S="$(cd "$S" && pwd)"
stop() { # name: SIGTERM, then SIGKILL after 10 s
	local f="$S/$1.pid" pid
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if kill "$pid" 2>/dev/null; then
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}
stop kubelet
sock=$S/containerd/containerd.sock
if [ -S "$sock" ]; then
	for t in $(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null); do ctr -a "$sock" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true; done
	sleep 1
fi
for p in scheduler controller-manager apiserver containerd etcd; do stop "$p"; done
# containerd-shim processes left by killed tasks of this cluster.
for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $sock" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
grep -o " $S/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
ip link delete jbci0 2>/dev/null || true
say "cluster in $S stopped"
