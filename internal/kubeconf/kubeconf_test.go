package kubeconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// kubeconfig writes a kubeconfig file whose one context points at server
// with a bearer token.
func kubeconfig(t *testing.T, dir, server, token string) string {
	t.Helper()
	p := filepath.Join(dir, "config")
	body := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ` + server + `
users:
- name: u
  user:
    token: ` + token + `
contexts:
- name: ctx
  context:
    cluster: c
    user: u
    namespace: bench
current-context: ctx
`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// isolate leaves REST no KUBECONFIG and no in-cluster service. (The
// home file, ~/.kube/config, is fixed when client-go loads: tests that
// need it absent skip where it exists.)
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
}

func TestRESTOrder(t *testing.T) {
	t.Run("file given", func(t *testing.T) {
		isolate(t)
		t.Setenv("KUBECONFIG", kubeconfig(t, t.TempDir(), "https://env.example:6443", "env-token"))
		cfg, err := REST(kubeconfig(t, t.TempDir(), "https://given.example:6443", "given-token"), "kubeconfig")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != "https://given.example:6443" || cfg.BearerToken != "given-token" {
			t.Errorf("REST = host %q token %q, want the file given, before KUBECONFIG", cfg.Host, cfg.BearerToken)
		}
	})
	t.Run("KUBECONFIG", func(t *testing.T) {
		isolate(t)
		t.Setenv("KUBECONFIG", kubeconfig(t, t.TempDir(), "https://env.example:6443", "env-token"))
		cfg, err := REST("", "kubeconfig")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != "https://env.example:6443" {
			t.Errorf("REST = host %q, want KUBECONFIG's", cfg.Host)
		}
	})
}

func TestRESTErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"absent file", "absent.kubeconfig", []string{"--k8s-kubeconfig", "absent.kubeconfig"}},
		{"nothing anywhere", "", []string{"--k8s-kubeconfig", "KUBECONFIG, in-cluster or ~/.kube/config"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			if tc.file == "" {
				if _, err := os.Stat(clientcmd.RecommendedHomeFile); err == nil {
					t.Skipf("%s exists on this machine", clientcmd.RecommendedHomeFile)
				}
			}
			file := tc.file
			if file != "" {
				file = filepath.Join(t.TempDir(), file)
			}
			cfg, err := REST(file, "k8s-kubeconfig")
			if err == nil {
				t.Fatalf("REST = host %q, want an error", cfg.Host)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("REST error %q, want it to say %q", err, w)
				}
			}
		})
	}
}
