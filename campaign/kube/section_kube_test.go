//go:build kubernetes

package kube

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/campaign"
)

// In the kubernetes build the section is validated with positions as
// the API server would: names, label keys and values, quantities.
func TestSectionNamesValidated(t *testing.T) {
	src := `name: v
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: sim}]
kubernetes:
  namespace: Bench_1
  node_selector: {"bad key!": x}
  tolerations: [{key: a, operator: Sometimes, effect: NoSchedule}]
  resources: {requests: {cpu: lots}}
  gpus: -1
`
	dir := t.TempDir()
	_, err := campaign.Load([]byte(src), filepath.Join(dir, "c.yaml"))
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"c.yaml:7:14: kubernetes.namespace: \"Bench_1\"",
		"c.yaml:8:31: kubernetes.node_selector.bad key!: label key",
		"c.yaml:9:17: kubernetes.tolerations[0]: operator \"Sometimes\": expected Equal or Exists",
		"c.yaml:10:31: kubernetes.resources.requests.cpu: quantity \"lots\"",
		"c.yaml:11:9: kubernetes.gpus: must be 0 or more, got -1",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}
