package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines/sim/simtest"

	simengine "github.com/joulebench/joulebench/engines/sim"
)

// User info and a query string in --engine-url reach the server but never
// run.json, the logs, stdout or stderr.
func TestEngineURLSecretsNeverWritten(t *testing.T) {
	cfg := simengine.Quick(simengine.DefaultConfig())
	cfg.Log = io.Discard
	srv := simtest.Serve(t, cfg)
	url := strings.Replace(srv.BaseURL(), "http://", "http://bob:pAsSw0rd@", 1) + "/v1?key=qUeRyS3cret"
	out := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runCLI(t, "run", enginesProfile, "--out", out, "--no-progress", "--telemetry", "none",
		"--engine-url", url, "--set", "request_count=2", "--set", "max_tokens=8", "--image-digest", testDigest)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	texts := map[string]string{"stdout": stdout, "stderr": stderr}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(out, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		texts[e.Name()] = string(b)
	}
	if _, ok := texts["run.json"]; !ok {
		t.Fatalf("no run.json among %v", entries)
	}
	if !strings.Contains(texts["run.json"], `"image_digest": "`+testDigest+`"`) {
		t.Errorf("run.json does not record the image digest:\n%s", texts["run.json"])
	}
	for name, text := range texts {
		for _, secret := range []string{"pAsSw0rd", "qUeRyS3cret"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows %q", name, secret)
			}
		}
	}
	if !strings.Contains(texts["run.json"], "key=[redacted]") {
		t.Errorf("run.json does not say where the engine was: %s", texts["run.json"])
	}
}

// testDigest is a well-formed image digest (sha256 of the empty string).
const testDigest = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
