# Shared by the .ci/k8s scripts (sourced): the cache directory, the release
# built, and the PATH holding the unpacked Debian tools.
KUBE_VERSION="${JOULEBENCH_K8S_VERSION:-v1.34.2}"
cache="${JOULEBENCH_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/joulebench-k8s}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
export PATH="$cache/root/usr/bin:$cache/root/usr/sbin:$cache/root/bin:$PATH"
say() { echo "k8s: $*" >&2; }
die() { echo "k8s: $*" >&2; exit 1; }
