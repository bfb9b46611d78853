package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/engines/sim/simtest"

	simengine "github.com/joulebench/joulebench/engines/sim"
)

// Every input a run names is checked before any run directory is created:
// exit 2 with a message that says which flag and what is wrong (before,
// each of these ran the simulator, ran the whole run and then failed, or
// left a run directory behind).
func TestRunInputsCheckedBeforeDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"empty engine url", []string{"--engine-url", ""}, "--engine-url is empty"},
		{"engine url port", []string{"--engine-url", "http://127.0.0.1:99999"}, "--engine-url: port 99999: a TCP port is 1 to 65535"},
		{"engine url scheme", []string{"--engine-url", "ftp://127.0.0.1:21"}, `--engine-url: scheme "ftp"`},
		{"engine url no host", []string{"--engine-url", "http://:8000"}, "--engine-url: no host"},
		{"port", []string{"--engine", "vllm", "--model", "m", "--port", "99999"}, "--port 99999: a TCP port is 1 to 65535"},
		{"format", []string{"--format", "xml"}, `--format: unknown format "xml"`},
		{"dataset format", []string{"--dataset-format", "nosuch"}, `--dataset-format "nosuch": valid formats are sharegpt, jsonl`},
		{"param below min", []string{"--set", "max_failed_fraction=-1"}, "max_failed_fraction: parameter of type float: -1 is below the minimum 0"},
		{"param NaN", []string{"--set", "cv_max=NaN"}, `cv_max: parameter of type float: "NaN" is not a finite number`},
		{"extra body", []string{"--extra-body", "notjson"}, `--extra-body "notjson": expected a JSON object`},
		{"replay", []string{"--telemetry", "replay", "--replay", "/nonexistent/power.csv"}, "--replay /nonexistent/power.csv:"},
		{"baseline", []string{"--baseline", "/nonexistent"}, "--baseline:"},
		{"output file dir", []string{"--output-file", "/nonexistent/r.json"}, "--output-file /nonexistent/r.json: directory /nonexistent does not exist"},
		{"runs", []string{"--runs", "0"}, "--runs 0: at least 1"},
		{"runs disagree", []string{"--runs", "2", "--set", "runs=3"}, "--runs 2 and --set runs=3 disagree"},
		{"model kind", []string{"--model", "bogus=x"}, `--model "bogus=x": "bogus" is not an engine kind`},
		{"model twice", []string{"--model", "a", "--model", "b"}, "--model given 2 times without KIND="},
		{"model other engine", []string{"--model", "ollama=tiny"}, "--model ollama=tiny: the run has no engine ollama"},
		// --engine-bin is checked before any engine starts, per engine.
		{"engine bin missing", []string{"--engine", "llamacpp", "--model-file", "m.gguf", "--engine-bin", "/nonexistent/llama-server"}, "--engine-bin for llamacpp: /nonexistent/llama-server does not exist"},
		{"engine bin a directory", []string{"--engine", "llamacpp", "--model-file", "m.gguf", "--engine-bin", "/"}, "--engine-bin for llamacpp: / is a directory"},
		{"engine bin not in PATH", []string{"--engine", "llamacpp", "--model-file", "m.gguf", "--engine-bin", "no-such-llama-server-jb"}, `--engine-bin for llamacpp: "no-such-llama-server-jb" is not an executable found in PATH`},
		{"engine bin other engine", []string{"--engine", "llamacpp", "--model-file", "m.gguf", "--engine-bin", "ollama=/bin/sh"}, "--engine-bin ollama=/bin/sh: the run has no engine ollama"},
		{"engine bin second engine's missing", []string{"--engine", "llamacpp", "--engine", "ollama", "--model", "ollama=tiny", "--model-file", "m.gguf",
			"--engine-bin", "llamacpp=/bin/sh", "--engine-bin", "ollama=/nonexistent/ollama"}, "--engine-bin for ollama: /nonexistent/ollama does not exist"},
		{"engine bin twice", []string{"--engine", "llamacpp", "--model-file", "m.gguf", "--engine-bin", "/bin/sh", "--engine-bin", "/bin/true"}, "--engine-bin given 2 times without KIND="},
		// Several engines: the profile is checked before their directory.
		{"engines param", []string{"--engine", "sim", "--engine", "sim", "--set", "window=0"}, "window: parameter of type int: 0 is below the minimum 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "benchmark-1.5", "--no-progress"}, tc.args...)
			_, errOut, code := runCLI(t, args...)
			if code != exitInvalid || !strings.Contains(errOut, tc.want) {
				t.Errorf("%v: exit %d, want %d with %q:\n%s", args, code, exitInvalid, tc.want, errOut)
			}
			if _, err := os.Stat("runs"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%v: runs/ was created", args)
			}
		})
	}
}

// --model chooses the model of a server given with --engine-url, whatever
// its kind (it was refused: "--model does not apply to --engine openai
// with --engine-url"). The simulator serves as the server.
func TestModelWithEngineURL(t *testing.T) {
	cfg := simengine.Quick(simengine.DefaultConfig())
	cfg.Log = io.Discard
	srv := simtest.Serve(t, cfg)
	out := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runCLI(t, "run", enginesProfile, "--out", out, "--no-progress", "--telemetry", "none",
		"--engine-url", srv.BaseURL(), "--model", cfg.Model, "--set", "request_count=2", "--set", "max_tokens=8")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"model": "`+cfg.Model+`"`) {
		t.Errorf("run.json does not name the model %s:\n%s", cfg.Model, b)
	}
}

// A run whose power data ends mid-run (a replayed power.csv of 1.5 s)
// cannot evaluate its formal energy: run exits 4, as analyze of the same
// directory does (run used to exit 0). --format json and --output-file
// write the results as analyze does.
func TestRunExitAndFormatsAsAnalyze(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator for several seconds")
	}
	dir := t.TempDir()
	power := filepath.Join(dir, "power.csv")
	if err := os.WriteFile(power, []byte("t,device,power_w,energy_j,mem_used_bytes\n1000,0,100,,\n1000.5,0,100,,\n1001,0,100,,\n1001.5,0,100,,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	file := filepath.Join(dir, "results.csv")
	args := []string{"run", "benchmark-1.0", "--out", out, "--telemetry", "replay", "--replay", power, "--format", "json", "--output-file", file}
	args = append(args, "--set", "baseline=1s", "--set", "sample_interval=100ms", "--set", "request_count=24",
		"--set", "accept_unsteady=true", "--set", "warmup_requests=2", "--no-progress")
	stdout, stderr, code := runCLI(t, args...)
	if code != exitEval {
		t.Fatalf("run: exit %d, want %d\n%s\n%s", code, exitEval, stdout, stderr)
	}
	if _, aerr, acode := runCLI(t, "analyze", out); acode != code {
		t.Errorf("analyze: exit %d, run %d\n%s", acode, code, aerr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil || res["output_throughput_tok_s"] == nil {
		t.Errorf("--output-file is not the results as JSON: %v\n%s", err, b)
	}
	// CSV on stdout, as analyze --format csv writes it.
	aout, _, _ := runCLI(t, "analyze", out, "--format", "csv")
	rows, err := csv.NewReader(strings.NewReader(aout)).ReadAll()
	if err != nil || len(rows) < 2 || !strings.HasPrefix(strings.Join(rows[0], ","), "name,kind,value,unit,note,simulated") {
		t.Errorf("analyze --format csv:\n%s", aout)
	}
}
