// Package kubehelper hands a command that asks for Kubernetes from the
// default joulebench binary, which carries no Kubernetes client, to
// joulebench-kube, the build with the kubernetes tag that does: which
// arguments ask for it, where the helper is, and the hand-over itself.
package kubehelper

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/joulebench/joulebench/engines/kubeflags"
	"github.com/joulebench/joulebench/internal/exitcode"
)

// DelegatedEnv marks a process that joulebench handed a Kubernetes
// command to: a helper that is not the Kubernetes build refuses instead
// of handing it on again.
const DelegatedEnv = "JOULEBENCH_KUBE_DELEGATED"

// Asked names the argument of args that asks for Kubernetes: --executor
// kubernetes, --engine kubernetes, a --k8s-* flag, or a --spec file whose
// engines include kubernetes; "" if none does.
func Asked(args []string) string {
	for i := 0; i < len(args); i++ {
		name, val, inline := strings.Cut(args[i], "=")
		if name == "--" {
			break
		}
		if !strings.HasPrefix(name, "--") {
			continue
		}
		if !inline && i+1 < len(args) {
			val = args[i+1]
		}
		switch {
		case name == "--executor" && val == kubeflags.Kind:
			return "--executor kubernetes"
		case name == "--engine" && slices.Contains(splitList(val), kubeflags.Kind):
			return "--engine kubernetes"
		case strings.HasPrefix(name, "--k8s-"):
			return name
		case name == "--spec" && val != "" && specAsks(val):
			return "--spec " + val + " (engine kubernetes)"
		}
	}
	return ""
}

// AskedByEnv names the environment variable (getenv's) that asks for
// Kubernetes: JOULEBENCH_EXECUTOR=kubernetes, JOULEBENCH_ENGINE holding
// kubernetes, or a JOULEBENCH_K8S_* setting of the engine kind; "" if none
// does. The configuration reads these as the flags of the same names.
func AskedByEnv(getenv func(string) string) string {
	switch {
	case getenv("JOULEBENCH_EXECUTOR") == kubeflags.Kind:
		return "JOULEBENCH_EXECUTOR=kubernetes"
	case slices.Contains(splitList(getenv("JOULEBENCH_ENGINE")), kubeflags.Kind):
		return "JOULEBENCH_ENGINE=kubernetes"
	}
	for _, f := range []string{kubeflags.FlagPod, kubeflags.FlagNamespace, kubeflags.FlagSimulated} {
		name := "JOULEBENCH_" + strings.ToUpper(strings.ReplaceAll(f, "-", "_"))
		if getenv(name) != "" {
			return name
		}
	}
	return ""
}

// splitList is a list flag's value split at its commas.
func splitList(v string) []string {
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// specAsks reads a spec file's engines; a file that cannot be read is
// left to the run to report.
func specAsks(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var s struct {
		Engines []string `json:"engines"`
	}
	return json.Unmarshal(b, &s) == nil && slices.Contains(s.Engines, kubeflags.Kind)
}

// Find finds joulebench-kube: JOULEBENCH_KUBE, else beside this
// executable, else in PATH.
func Find() (string, error) {
	if p := os.Getenv(kubeflags.HelperEnv); p != "" {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), kubeflags.HelperName)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return exec.LookPath(kubeflags.HelperName)
}

// Status says where a joulebench's Kubernetes commands run, for
// `joulebench version`: builtIn for the Kubernetes build.
func Status(builtIn bool) string {
	if builtIn {
		return "client built in (the kubernetes build, " + kubeflags.HelperName + ")"
	}
	if p, err := Find(); err == nil {
		return "handed to " + p
	}
	return "no " + kubeflags.HelperName + " beside joulebench, in PATH or in " + kubeflags.HelperEnv + " (go build -tags kubernetes -o " + kubeflags.HelperName + " ./cmd/joulebench)"
}

// HandOver is what joulebench does with its arguments before anything
// else: a command that asks for Kubernetes (Asked) continues in
// joulebench-kube, in this process's place (the same arguments,
// environment, PID and signals); HandOver returns only when it does not
// hand over, then saying why as invalid input: no helper (with how to
// build one), a helper that handed the command back (DelegatedEnv), or
// one that cannot start. A command asked for by the environment alone
// (AskedByEnv) is handed over only when there is a helper, else it goes on
// here and is refused only where it needs Kubernetes. builtIn (this is
// the Kubernetes build): nothing is handed over, and the mark of a
// hand-over is cleared for the processes this one starts.
func HandOver(builtIn bool, args []string, getenv func(string) string) error {
	if builtIn {
		os.Unsetenv(DelegatedEnv)
		return nil
	}
	why := Asked(args)
	byEnv := why == ""
	if byEnv {
		if why = AskedByEnv(getenv); why == "" {
			return nil
		}
	}
	helper, err := Find()
	switch {
	case err != nil && byEnv:
		return nil
	case getenv(DelegatedEnv) != "":
		return exitcode.Invalidf("%s: handed to a joulebench that is not the Kubernetes build: %w", why, kubeflags.ErrNotBuiltIn)
	case err != nil:
		return exitcode.Invalidf("%s: %w", why, kubeflags.ErrNotBuiltIn)
	}
	err = syscall.Exec(helper, append([]string{helper}, args...), append(os.Environ(), DelegatedEnv+"=1"))
	return exitcode.Invalidf("%s: starting %s (%s): %w", why, kubeflags.HelperName, helper, err)
}
