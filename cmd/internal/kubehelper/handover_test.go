package kubehelper

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines/kubeflags"
	"github.com/joulebench/joulebench/internal/exitcode"
)

// writeHelper writes an executable joulebench-kube into dir: a shell
// script that prints the hand-over's mark and its arguments.
func writeHelper(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, kubeflags.HelperName)
	script := "#!/bin/sh\necho \"delegated=$" + DelegatedEnv + " args=$*\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// noHelper leaves this process no joulebench-kube: none named, none in
// PATH (the test binary's own folder holds none).
func noHelper(t *testing.T) {
	t.Helper()
	t.Setenv(kubeflags.HelperEnv, "")
	t.Setenv("PATH", t.TempDir())
}

func TestFind(t *testing.T) {
	t.Run("env", func(t *testing.T) {
		t.Setenv(kubeflags.HelperEnv, "/opt/jb/joulebench-kube")
		if p, err := Find(); err != nil || p != "/opt/jb/joulebench-kube" {
			t.Errorf("Find() = %q, %v; want the path %s names", p, err, kubeflags.HelperEnv)
		}
	})
	t.Run("path", func(t *testing.T) {
		dir := t.TempDir()
		want := writeHelper(t, dir)
		t.Setenv(kubeflags.HelperEnv, "")
		t.Setenv("PATH", dir)
		if p, err := Find(); err != nil || p != want {
			t.Errorf("Find() = %q, %v; want %q from PATH", p, err, want)
		}
	})
	t.Run("none", func(t *testing.T) {
		noHelper(t)
		if p, err := Find(); err == nil {
			t.Errorf("Find() = %q, want an error with no helper anywhere", p)
		}
	})
}

func TestStatus(t *testing.T) {
	if got := Status(true); !strings.HasPrefix(got, "client built in") {
		t.Errorf("Status(true) = %q, want the built-in client", got)
	}
	t.Setenv(kubeflags.HelperEnv, "/opt/jb/joulebench-kube")
	if got, want := Status(false), "handed to /opt/jb/joulebench-kube"; got != want {
		t.Errorf("Status(false) with a helper = %q, want %q", got, want)
	}
	noHelper(t)
	got := Status(false)
	for _, want := range []string{"no " + kubeflags.HelperName, kubeflags.HelperEnv, "go build -tags kubernetes"} {
		if !strings.Contains(got, want) {
			t.Errorf("Status(false) with no helper = %q, want it to say %q", got, want)
		}
	}
}

// HandOver's refusals and the cases it leaves to this process; the
// hand-over itself replaces the process (TestHandOverExecs).
func TestHandOverStays(t *testing.T) {
	kubeArgs := []string{"sweep", "c.yaml", "--executor", "kubernetes"}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	t.Run("built in clears the mark", func(t *testing.T) {
		t.Setenv(DelegatedEnv, "1")
		if err := HandOver(true, kubeArgs, os.Getenv); err != nil {
			t.Fatalf("HandOver(builtIn) = %v, want nil", err)
		}
		if v, ok := os.LookupEnv(DelegatedEnv); ok {
			t.Errorf("%s = %q after HandOver(builtIn), want it unset for the processes this one starts", DelegatedEnv, v)
		}
	})
	t.Run("nothing asked", func(t *testing.T) {
		t.Setenv(kubeflags.HelperEnv, "/nonexistent/joulebench-kube")
		if err := HandOver(false, []string{"analyze", "out"}, env(nil)); err != nil {
			t.Errorf("HandOver(analyze) = %v, want nil", err)
		}
	})
	t.Run("env alone, no helper", func(t *testing.T) {
		noHelper(t)
		if err := HandOver(false, []string{"sweep", "c.yaml"}, env(map[string]string{"JOULEBENCH_EXECUTOR": "kubernetes"})); err != nil {
			t.Errorf("HandOver = %v, want nil: a command asked for by the environment alone goes on here", err)
		}
	})
	for _, tc := range []struct {
		name   string
		helper bool
		env    map[string]string
		args   []string
		want   []string
	}{
		{"no helper", false, nil, kubeArgs, []string{"--executor kubernetes: ", "go build -tags kubernetes"}},
		{"handed back", true, map[string]string{DelegatedEnv: "1"}, kubeArgs, []string{"--executor kubernetes: handed to a joulebench that is not the Kubernetes build"}},
		{"env, handed back", true, map[string]string{DelegatedEnv: "1", "JOULEBENCH_K8S_POD": "p.yaml"}, []string{"run", "benchmark-1.5"}, []string{"JOULEBENCH_K8S_POD: handed to"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noHelper(t)
			if tc.helper {
				t.Setenv(kubeflags.HelperEnv, writeHelper(t, t.TempDir()))
			}
			err := HandOver(false, tc.args, env(tc.env))
			if err == nil {
				t.Fatal("HandOver = nil, want a refusal")
			}
			if !errors.Is(err, kubeflags.ErrNotBuiltIn) {
				t.Errorf("HandOver = %v, want it to wrap ErrNotBuiltIn (how to get joulebench-kube)", err)
			}
			if code := exitcode.Of(err); code != int(exitcode.Invalid) {
				t.Errorf("exit code %d, want %d (invalid input)", code, exitcode.Invalid)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("HandOver = %q, want it to say %q", err, w)
				}
			}
		})
	}
	t.Run("helper cannot start", func(t *testing.T) {
		noHelper(t)
		bad := filepath.Join(t.TempDir(), kubeflags.HelperName) // absent
		t.Setenv(kubeflags.HelperEnv, bad)
		err := HandOver(false, kubeArgs, env(nil))
		if err == nil || !strings.Contains(err.Error(), "starting "+kubeflags.HelperName+" ("+bad+")") {
			t.Fatalf("HandOver = %v, want it to name the helper that could not start", err)
		}
		if code := exitcode.Of(err); code != int(exitcode.Invalid) {
			t.Errorf("exit code %d, want %d", code, exitcode.Invalid)
		}
	})
}

// handOverChild marks the test binary run as the process that hands over.
const handOverChild = "JOULEBENCH_TEST_HANDOVER_CHILD"

// A command that asks for Kubernetes continues in joulebench-kube in this
// process's place, with the same arguments and the hand-over's mark. The
// test binary runs itself as the process that hands over; the helper, a
// script, prints what it was given.
func TestHandOverExecs(t *testing.T) {
	if os.Getenv(handOverChild) == "1" {
		err := HandOver(false, []string{"sweep", "c.yaml", "--executor", "kubernetes"}, os.Getenv)
		// Reached only when nothing was handed over.
		os.Stderr.WriteString("HandOver returned: " + errString(err) + "\n")
		os.Exit(7)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh for the stand-in helper")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHandOverExecs$")
	cmd.Env = append(os.Environ(), handOverChild+"=1", kubeflags.HelperEnv+"="+writeHelper(t, t.TempDir()), DelegatedEnv+"=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the process that hands over: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "delegated=1 args=sweep c.yaml --executor kubernetes"; got != want {
		t.Errorf("the helper got %q, want %q", got, want)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
