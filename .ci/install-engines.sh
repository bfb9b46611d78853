#!/usr/bin/env bash
# Installs the two real inference engines the integration tests run
# (cmd/joulebench/engines_integration_test.go), into a cache directory
# outside the repository, and writes the file of variables the tests read:
#
#   - Ollama, built from source through the Go module proxy
#     (go install github.com/ollama/ollama@vX), with -O3 C flags (the
#     default -O2 -g build generates about 5x slower) and its version
#     stamped in (otherwise it reports 0.0.0);
#   - llama-server, Debian sid's llama.cpp-tools package, installed into a
#     sid chroot made with debootstrap (bookworm has no package, and the
#     sid binary needs sid's glibc). A wrapper script runs it in that
#     chroot, in a private mount namespace where the directories of its
#     path arguments (the model file) are bound at the same paths and
#     /proc, /dev and /sys are mounted.
#
# Idempotent: what is already installed is kept. Needs root (debootstrap,
# chroot, mount), go, and network access to the Go module proxy and a
# Debian mirror (the one configured in /etc/apt unless
# JOULEBENCH_DEBIAN_MIRROR says otherwise).
#
# Usage: .ci/install-engines.sh [ENV_FILE]
#   Cache directory: $JOULEBENCH_ENGINES_DIR (default
#   ${XDG_CACHE_HOME:-$HOME/.cache}/joulebench-engines).
#   ENV_FILE (default $JOULEBENCH_ENGINES_DIR/engines.env) receives
#   export lines for JOULEBENCH_OLLAMA_BIN and JOULEBENCH_LLAMA_SERVER;
#   source it before `go test`.
set -euo pipefail

OLLAMA_VERSION="${JOULEBENCH_OLLAMA_VERSION:-0.6.5}"
cache="${JOULEBENCH_ENGINES_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/joulebench-engines}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
env_file="${1:-$cache/engines.env}"

say() { echo "install-engines: $*"; }
die() { echo "install-engines: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot, mount)"
command -v go >/dev/null || die "go is not installed"

# ---- Ollama ----------------------------------------------------------------
ollama_dir="$cache/ollama-$OLLAMA_VERSION"
ollama_bin="$ollama_dir/bin/ollama"
if [ -x "$ollama_bin" ] && "$ollama_bin" --version 2>/dev/null | grep -q "$OLLAMA_VERSION"; then
	say "ollama $OLLAMA_VERSION already installed: $ollama_bin"
else
	say "building ollama $OLLAMA_VERSION with go install (a few minutes)"
	command -v gcc >/dev/null && command -v g++ >/dev/null || {
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc g++ >/dev/null
	}
	mkdir -p "$ollama_dir/bin"
	start=$SECONDS
	# Outside any module, without the caller's GOFLAGS (-mod=mod is refused
	# by go install pkg@version).
	(cd "$ollama_dir" && env GOFLAGS= GOBIN="$ollama_dir/bin" CGO_ENABLED=1 \
		CGO_CFLAGS="-O3" CGO_CXXFLAGS="-O3" \
		go install -trimpath \
		-ldflags "-s -w -X github.com/ollama/ollama/version.Version=$OLLAMA_VERSION" \
		"github.com/ollama/ollama@v$OLLAMA_VERSION")
	say "ollama built in $((SECONDS - start)) s"
fi

# ---- llama-server (Debian sid chroot) --------------------------------------
root="$cache/sid"
wrapper="$cache/bin/llama-server"
if [ -x "$root/usr/bin/llama-server" ]; then
	say "llama-server already installed in $root"
else
	command -v debootstrap >/dev/null || {
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
	}
	mirror="${JOULEBENCH_DEBIAN_MIRROR:-}"
	if [ -z "$mirror" ]; then
		# The first Debian archive (not security) configured for apt.
		mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
			awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/ && $i ~ /debian/) { print $i; exit } }')
	fi
	if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
		mirror=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/ && $i !~ /security/) { print $i; exit } }' /etc/apt/sources.list)
	fi
	[ -n "$mirror" ] || die "no Debian mirror found in /etc/apt; set JOULEBENCH_DEBIAN_MIRROR"
	say "debootstrap sid from $mirror into $root"
	start=$SECONDS
	rm -rf "$root.tmp"
	debootstrap --variant=minbase sid "$root.tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
		{ tail -n 30 "$cache/debootstrap.log" >&2; die "debootstrap failed (log: $cache/debootstrap.log)"; }
	cp /etc/resolv.conf "$root.tmp/etc/resolv.conf" 2>/dev/null || true
	chroot "$root.tmp" apt-get -qq -o Acquire::Check-Valid-Until=false update
	chroot "$root.tmp" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		-o Acquire::Check-Valid-Until=false --no-install-recommends llama.cpp-tools >/dev/null
	chroot "$root.tmp" apt-get clean
	[ -x "$root.tmp/usr/bin/llama-server" ] || die "llama.cpp-tools installed no /usr/bin/llama-server"
	rm -rf "$root"
	mv "$root.tmp" "$root"
	say "llama-server installed in $((SECONDS - start)) s"
fi

mkdir -p "$cache/bin"
cat >"$wrapper.tmp" <<EOF
#!/usr/bin/env bash
# Runs Debian sid's llama-server in the chroot $root, written by
# .ci/install-engines.sh. In a private mount namespace it mounts /proc, /dev
# and /sys and binds the directory of every absolute path argument (the
# model file) at the same path inside the chroot; the namespace goes away
# with the process. exec all the way down: the PID is llama-server's.
set -euo pipefail
root="$root"
EOF
cat >>"$wrapper.tmp" <<'EOF'
binds=()
for a in "$@"; do
	case "$a" in
	/*) if [ -e "$a" ]; then
		d="$a"; [ -d "$d" ] || d="$(dirname "$a")"
		binds+=("$d")
	fi ;;
	esac
done
exec unshare --mount --propagation private -- /bin/sh -c '
	set -e
	root="$1"; shift
	n="$1"; shift
	mount -t proc proc "$root/proc"
	mount --rbind /dev "$root/dev"
	mount --rbind /sys "$root/sys"
	i=0
	while [ "$i" -lt "$n" ]; do
		mkdir -p "$root$1"
		mount --bind "$1" "$root$1"
		shift; i=$((i + 1))
	done
	exec chroot "$root" /usr/bin/llama-server "$@"
' sh "$root" "${#binds[@]}" "${binds[@]}" "$@"
EOF
chmod +x "$wrapper.tmp"
mv "$wrapper.tmp" "$wrapper"

ollama_version=$("$ollama_bin" --version 2>&1 | tail -n 1 | sed 's/^Warning: //' || true)
llama_version=$("$wrapper" --version 2>&1 | grep -i version | head -n 1 || true)
llama_pkg=$(chroot "$root" dpkg-query -W -f '${Version}' llama.cpp-tools 2>/dev/null || true)
mkdir -p "$(dirname "$env_file")"
cat >"$env_file.tmp" <<EOF
export JOULEBENCH_OLLAMA_BIN="$ollama_bin"
export JOULEBENCH_LLAMA_SERVER="$wrapper"
EOF
mv "$env_file.tmp" "$env_file"
say "ollama:       $ollama_bin ($ollama_version)"
say "llama-server: $wrapper (llama.cpp-tools $llama_pkg; $llama_version)"
say "variables for the tests: $env_file"
