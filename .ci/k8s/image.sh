#!/usr/bin/env bash
# Makes a local OCI image without a registry or a daemon: busybox-static (sh,
# tar, sleep, ...) plus, optionally, one static binary at /usr/local/bin/NAME,
# packed with umoci into an OCI layout written as a tar file, which
# `ctr images import` takes (start.sh imports the images in the cache; load.sh
# imports one into a running cluster).
#
# Usage: .ci/k8s/image.sh OUT.tar [BINARY [--entrypoint]]
#   BINARY's base name is its name in the image; with --entrypoint it is the
#   image's entrypoint (the sandbox image), otherwise PATH finds it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"
out=$1; bin=${2:-}; entry=${3:-}
command -v umoci >/dev/null || die "umoci missing: run .ci/k8s/build.sh first"
busybox="$cache/root/bin/busybox"
[ -x "$busybox" ] || die "busybox-static missing: run .ci/k8s/build.sh first"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
layout=$work/layout; bundle=$work/bundle
umoci init --layout "$layout" >/dev/null
umoci new --image "$layout:local" >/dev/null
umoci unpack --rootless --image "$layout:local" "$bundle" >/dev/null 2>&1 || umoci unpack --image "$layout:local" "$bundle" >/dev/null
root=$bundle/rootfs
mkdir -p "$root/bin" "$root/usr/local/bin" "$root/tmp" "$root/etc"
cp "$busybox" "$root/bin/busybox"
# Every applet as a link, as busybox --install would (the pod's script and
# the sweep's exec use sh, tar, wc, mv, test, touch, sleep, date).
for a in $("$busybox" --list); do [ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"; done
chmod 1777 "$root/tmp"
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
cfg=(--config.env PATH=/usr/local/bin:/bin --config.workingdir /tmp)
if [ -n "$bin" ]; then
	name=$(basename "$bin")
	cp "$bin" "$root/usr/local/bin/$name"
	chmod 755 "$root/usr/local/bin/$name"
	[ "$entry" = --entrypoint ] && cfg+=(--config.entrypoint "/usr/local/bin/$name")
fi
umoci repack --image "$layout:local" "$bundle" >/dev/null
umoci config --image "$layout:local" "${cfg[@]}" >/dev/null
mkdir -p "$(dirname "$out")"
tar -C "$layout" -cf "$out.tmp" .
mv "$out.tmp" "$out"
