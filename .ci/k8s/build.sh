#!/usr/bin/env bash
# Builds what the CI's single-node Kubernetes cluster runs, into a cache
# directory outside the repository; what is already there is kept, so only
# the first run pays (about 6 minutes on 2 CPUs; seconds afterwards):
#
#   - containerd, runc, umoci, busybox-static and the CNI plugins: Debian
#     packages fetched with apt-get download and unpacked with dpkg -x under
#     $cache/root (nothing is installed on the host);
#   - kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and
#     kubectl of one Kubernetes release, built from the Go module proxy in the
#     scratch module .ci/k8s/kube-build (k8s.io/kubernetes plus its staging
#     modules at their published versions), with the version stamped in (a
#     server that says v0.0.0 is refused by kubectl);
#   - etcd, built from the Go module proxy (.ci/k8s/etcd-build);
#   - the sandbox ("pause") and busybox images, as OCI layouts in tar form,
#     made with umoci (no registry is needed or reachable).
#
# Usage: .ci/k8s/build.sh   (cache: $JOULEBENCH_K8S_CACHE, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/joulebench-k8s). Prints the cache directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"
mkdir -p "$cache"/{root,debs,bin,images}

if [ ! -x "$cache/root/usr/bin/containerd" ] || [ ! -x "$cache/root/bin/busybox" ]; then
	say "fetching Debian packages (containerd, runc, umoci, busybox-static, CNI plugins)"
	(cd "$cache/debs" && { apt-get update -qq >/dev/null 2>&1 || true; } &&
		apt-get download -qq containerd runc umoci busybox-static containernetworking-plugins >/dev/null)
	for d in "$cache"/debs/*.deb; do dpkg -x "$d" "$cache/root"; done
fi

gobuild() { # module-dir out (a directory ending in /, or a file) ldflags packages...
	local src=$1 out=$2 ld=$3; shift 3
	local work; work="$(mktemp -d)"
	cp -r "$src/." "$work/"
	(cd "$work" && env GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$out" "$@")
	rm -rf "$work"
}

if [ ! -x "$cache/bin/kubelet" ] || [ "$(cat "$cache/bin/kube.version" 2>/dev/null)" != "$KUBE_VERSION" ]; then
	say "building Kubernetes $KUBE_VERSION from the Go module proxy (about 6 minutes on 2 CPUs)"
	start=$SECONDS
	minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
	gobuild "$here/kube-build" "$cache/bin/" "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl
	echo "$KUBE_VERSION" >"$cache/bin/kube.version"
	say "Kubernetes built in $((SECONDS - start)) s"
fi

if [ ! -x "$cache/bin/etcd" ]; then
	say "building etcd from the Go module proxy"
	gobuild "$here/etcd-build" "$cache/bin/etcd" "-s -w" go.etcd.io/etcd/server/v3
fi

if [ ! -x "$cache/bin/pause" ]; then
	gobuild "$here/pause" "$cache/bin/pause" "-s -w" .
fi

if [ ! -f "$cache/images/pause.tar" ]; then
	"$here/image.sh" "$cache/images/pause.tar" "$cache/bin/pause" --entrypoint
fi
if [ ! -f "$cache/images/busybox.tar" ]; then
	"$here/image.sh" "$cache/images/busybox.tar"
fi
say "cluster binaries ready in $cache"
echo "$cache"
