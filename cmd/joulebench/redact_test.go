package main

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// echoServer answers like a server that puts the whole request (URL with
// its query, Authorization header) into its error bodies: /v1/models with
// 401 when models401 is set, every chat request with 500.
func echoServer(t *testing.T, models401 bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echo := fmt.Sprintf("request %s %s with Authorization: %s; escaped %s", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), url.QueryEscape(r.URL.RawQuery))
		switch {
		case r.URL.Path == "/v1/models" && models401:
			http.Error(w, echo, http.StatusUnauthorized)
		case r.URL.Path == "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"echo-model","object":"model"}]}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":{"message":%q}}`, echo)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// outputs reads stdout, stderr and every file of the run directory.
func outputs(t *testing.T, stdout, stderr, dir string) map[string]string {
	t.Helper()
	texts := map[string]string{"stdout": stdout, "stderr": stderr}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			texts[e.Name()] = string(b)
		}
	}
	return texts
}

// A server that echoes the request in an error body shows none of the
// secrets joulebench sent it, in any encoding, on stderr, in run.json's
// reason or in requests.jsonl's errors.
func TestEchoedSecretsRedacted(t *testing.T) {
	const user, pw, query, key = "bob", "pAsSw0rd-x", "qUeRy-S3cret", "sk-BeArEr-k3y"
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
	cases := []struct {
		name      string
		models401 bool
		wantFile  string // a file that must have been written
	}{
		{"models 401", true, ""},
		{"chat 500", false, "requests.jsonl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := echoServer(t, c.models401)
			engineURL := strings.Replace(srv.URL, "http://", "http://"+user+":"+pw+"@", 1) + "/v1?api_key=" + query
			out := filepath.Join(t.TempDir(), "run")
			stdout, stderr, code := runCLI(t, "run", enginesProfile, "--out", out, "--no-progress", "--telemetry", "none",
				"--engine-url", engineURL, "--api-key", key, "--set", "request_count=2", "--set", "warmup_requests=0",
				"--set", "ready_timeout=1s", "--image-digest", testDigest)
			if c.models401 && code == exitOK {
				t.Fatalf("a server that refuses /v1/models: exit 0\n%s", stderr)
			}
			texts := outputs(t, stdout, stderr, out)
			if c.wantFile != "" && !strings.Contains(texts[c.wantFile], "http 500") {
				t.Errorf("%s does not record the failures:\n%s\nstderr:\n%s", c.wantFile, texts[c.wantFile], stderr)
			}
			if c.models401 && !strings.Contains(stderr, "[redacted]") {
				t.Errorf("stderr shows no redaction mark (did the server's body reach it?):\n%s", stderr)
			}
			for name, text := range texts {
				for _, s := range []string{pw, query, key, basic, url.QueryEscape(basic)} {
					if strings.Contains(text, s) {
						t.Errorf("%s shows %q:\n%s", name, s, text)
					}
				}
			}
		})
	}
}

// --extra-body members with secret names, and those of names marked with
// --secret-name, reach the server but not run.json nor the logs.
func TestExtraBodySecretsRedacted(t *testing.T) {
	srv := echoServer(t, false)
	out := filepath.Join(t.TempDir(), "run")
	body := `{"api_key": "bodyKeyV4lue", "my_session": "s3ssionV4lue", "think": false, "pwd": "pw"}`
	stdout, stderr, _ := runCLI(t, "run", enginesProfile, "--out", out, "--no-progress", "--telemetry", "none",
		"--engine-url", srv.URL+"/v1", "--extra-body", body, "--secret-name", "session",
		"--set", "request_count=1", "--set", "warmup_requests=0", "--image-digest", testDigest)
	texts := outputs(t, stdout, stderr, out)
	meta := texts["run.json"]
	if !strings.Contains(meta, `extra_body`) || !strings.Contains(meta, `\"think\":false`) {
		t.Fatalf("run.json does not record --extra-body:\n%s\n%s", meta, stderr)
	}
	for _, want := range []string{`\"api_key\":\"[redacted]\"`, `\"my_session\":\"[redacted]\"`, `\"pwd\":\"[redacted]\"`} {
		if !strings.Contains(meta, want) {
			t.Errorf("run.json lacks %s:\n%s", want, meta)
		}
	}
	for name, text := range texts {
		for _, s := range []string{"bodyKeyV4lue", "s3ssionV4lue"} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows %q", name, s)
			}
		}
	}
}

// A server that redirects to another host (localhost:P2 for 127.0.0.1:P1)
// gets the redirect refused: P2 never receives the Basic credentials, the
// URL's query or the bearer key, and the refusal is said.
func TestRedirectToOtherHostRefused(t *testing.T) {
	const user, pw, query, key = "bob", "pAsSw0rd-r", "qUeRy-r3dir", "sk-r3dir-k3y"
	cases := []struct {
		name        string
		redirectAll bool // else /v1/models answers and the requests are redirected
	}{
		{"every path", true},
		{"requests only", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string // what P2 received
			p2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got = append(got, r.Method+" "+r.URL.RequestURI()+" auth="+r.Header.Get("Authorization"))
				mu.Unlock()
				fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			}))
			t.Cleanup(p2.Close)
			_, p2Port, _ := strings.Cut(strings.TrimPrefix(p2.URL, "http://"), ":")
			p1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !c.redirectAll && r.URL.Path == "/v1/models" {
					fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
					return
				}
				http.Redirect(w, r, "http://localhost:"+p2Port+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			}))
			t.Cleanup(p1.Close)
			engineURL := strings.Replace(p1.URL, "http://", "http://"+user+":"+pw+"@", 1) + "/v1?api_key=" + query
			out := filepath.Join(t.TempDir(), "run")
			stdout, stderr, _ := runCLI(t, "run", enginesProfile, "--out", out, "--no-progress", "--telemetry", "none",
				"--engine-url", engineURL, "--api-key", key, "--set", "request_count=1", "--set", "warmup_requests=0",
				"--set", "ready_timeout=1s", "--image-digest", testDigest)
			mu.Lock()
			defer mu.Unlock()
			if len(got) > 0 {
				t.Errorf("the other host received %d requests: %q", len(got), got)
			}
			texts := outputs(t, stdout, stderr, out)
			all := strings.Join([]string{texts["stderr"], texts["run.json"], texts["requests.jsonl"]}, "\n")
			if !strings.Contains(all, "redirect to another host refused") {
				t.Errorf("the refusal is not said:\n%s", all)
			}
		})
	}
}

// sweep --dry-run prints the campaign's command lines (local) and sbatch
// scripts (Slurm) with its --api-key, the credentials and query of its
// --engine-url and the values of its secret --engine-env hidden.
func TestSweepDryRunRedacts(t *testing.T) {
	const campaignFile = `name: t
profile: benchmark-1.5
out: out
matrix:
  engine: [{kind: sim}]
  model: [{id: sim-llm-8b, params: 8e9}]
  scenario: [{name: chat, dataset: chat}]
args: [--set, request_count=20, --api-key, "sk-CaMpAiGn-1", --engine-url, "http://alice:cAmPw-2@127.0.0.1:9/v1?k=cAmQ-3", "--engine-env=OPENAI_KEY=hf_cAmP-4"]
slurm: {gpus: false, time: "00:10:00", poll: 1s}
`
	for _, executor := range []string{"local", "slurm"} {
		t.Run(executor, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "campaign.yaml")
			if err := os.WriteFile(path, []byte(campaignFile), 0o644); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, code := runCLI(t, "sweep", path, "--dry-run", "--executor", executor, "--joulebench-bin", "/bin/joulebench")
			if code != exitOK {
				t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
			}
			// A Slurm job gets its secrets exported (JOULEBENCH_*), not as
			// arguments that ps shows on the node.
			shows := map[string]string{"local": "--api-key", "slurm": "export JOULEBENCH_API_KEY="}[executor]
			if !strings.Contains(stdout, shows) || !strings.Contains(stdout, "127.0.0.1:9") {
				t.Fatalf("the plan does not show the command line:\n%s", stdout)
			}
			for _, s := range []string{"sk-CaMpAiGn-1", "cAmPw-2", "cAmQ-3", "hf_cAmP-4"} {
				if strings.Contains(stdout+stderr, s) {
					t.Errorf("--dry-run shows %q:\n%s", s, stdout)
				}
			}
		})
	}
}

// --dcgm-url's password and query values reach neither run.json (the
// telemetry note, the failure reason) nor stderr nor `devices`.
func TestDCGMURLSecretsHidden(t *testing.T) {
	const pw, q = "dCgMsEcReT", "dCgMtOkEn"
	prom, err := os.ReadFile("../../telemetry/dcgm/testdata/node1-0.prom")
	if err != nil {
		t.Fatal(err)
	}
	serve := func(fail bool) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if fail {
				http.Error(w, "collector failed for "+r.URL.RequestURI(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			w.Write(prom)
		}))
		t.Cleanup(srv.Close)
		return strings.Replace(srv.URL, "http://", "http://u:"+pw+"@", 1) + "/metrics?tok=" + q
	}
	cases := []struct {
		name string
		args []string
		file string // a file of the run that must exist
	}{
		{"run, exporter answers", []string{"run", enginesProfile, "--engine", "sim", "--telemetry", "dcgm", "--dcgm-url", serve(false)}, "run.json"},
		{"run, exporter fails", []string{"run", enginesProfile, "--engine", "sim", "--telemetry", "dcgm", "--dcgm-url", serve(true)}, ""},
		{"devices, exporter fails", []string{"devices", "--dcgm-url", serve(true)}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := c.args
			if args[0] == "run" {
				args = append(args, "--out", out, "--no-progress", "--set", "request_count=1", "--set", "warmup_requests=0", "--set", "baseline=250ms")
			}
			stdout, stderr, _ := runCLI(t, args...)
			texts := outputs(t, stdout, stderr, out)
			if c.file != "" && !strings.Contains(texts[c.file], "tok=[redacted]") {
				t.Errorf("%s does not say where telemetry came from:\n%s\n%s", c.file, texts[c.file], stderr)
			}
			if !strings.Contains(stdout+stderr+texts["run.json"], "127.0.0.1") {
				t.Errorf("nothing names the exporter:\n%s\n%s", stdout, stderr)
			}
			for name, text := range texts {
				for _, s := range []string{pw, q} {
					if strings.Contains(text, s) {
						t.Errorf("%s shows %q:\n%s", name, s, text)
					}
				}
			}
		})
	}
}
