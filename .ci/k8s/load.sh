#!/usr/bin/env bash
# Builds the local joulebench image (busybox-static plus a static joulebench
# binary; the released image is the repository's Containerfile) and imports
# it into the running cluster's containerd as docker.io/library/joulebench:local.
#
# Usage: .ci/k8s/load.sh STATE [BINARY]   (BINARY default: built here with
# CGO_ENABLED=0 from the repository). Prints the image reference.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"
S=${1:?usage: load.sh STATE [BINARY]}
S="$(cd "$S" && pwd)"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
bin=${2:-}
if [ -z "$bin" ]; then
	(cd "$here/../.." && CGO_ENABLED=0 go build -trimpath -o "$work/joulebench" ./cmd/joulebench)
	bin=$work/joulebench
elif [ "$(basename "$bin")" != joulebench ]; then
	cp "$bin" "$work/joulebench"; bin=$work/joulebench
fi
"$here/image.sh" "$work/joulebench.tar" "$bin"
ctr -a "$S/containerd/containerd.sock" -n k8s.io images import --base-name docker.io/library/joulebench "$work/joulebench.tar" >/dev/null
echo "docker.io/library/joulebench:local"
