package campaign

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The secrets of a campaign's run flags, as a sweep would pass them.
const (
	secretKey  = "sk-KEY-s3cret"
	secretPass = "pw-s3cret"
	secretBody = "body-s3cret"
	secretEnv  = "hf-s3cret"
	secretArg  = "arg-s3cret"
)

const secretCampaign = "name: t\nprofile: benchmark-1.5\nout: out\n" +
	"matrix: {engine: [{kind: vllm, args: [--engine-url, 'http://u:" + secretPass + "@127.0.0.1:9/v1']}]}\n" +
	"args: [--api-key=" + secretKey + ", --extra-body, '{\"token\":\"" + secretBody + "\"}', --engine-env, HF_TOKEN=" + secretEnv + ", '--engine-arg=--api-key=" + secretArg + "']\n"

// pidStarter starts the real process and hands its PID over, so that the
// test can read its command line while it runs.
type pidStarter struct{ pids chan int }

func (s pidStarter) Start(binary string, args, env []string, output io.Writer) (Process, error) {
	p, err := ExecStarter{}.Start(binary, args, env, output)
	if err == nil {
		s.pids <- p.Pid()
	}
	return p, err
}

// A local sweep's child gets its secrets (--api-key, credentials in
// --engine-url, --extra-body) through its environment, which the run
// command reads (JOULEBENCH_API_KEY, JOULEBENCH_ENGINE_URL,
// JOULEBENCH_EXTRA_BODY): its command line, which any local user reads
// (ps, /proc/PID/cmdline), holds none of them. The child is a real
// process: a shell script standing for joulebench that writes the
// variables it got and waits to be read.
func TestSweepChildArgvHoldsNoSecret(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc")
	}
	c := load(t, secretCampaign)
	r := c.Expand().Runs[0]
	if !slices.Contains(r.Config.Args, "--api-key="+secretKey) {
		t.Fatalf("the plan's args lack the key: %q", r.Config.Args)
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	envOut, gate := filepath.Join(dir, "env"), filepath.Join(dir, "gate")
	script := filepath.Join(dir, "joulebench")
	body := "#!/bin/sh\nprintf '%s\\n%s\\n%s\\n%s\\n' \"$JOULEBENCH_API_KEY\" \"$JOULEBENCH_ENGINE_URL\" \"$JOULEBENCH_EXTRA_BODY\" \"$JOULEBENCH_SECRET_ARGS\" > " + envOut + ".tmp\n" +
		"mv " + envOut + ".tmp " + envOut + "\nwhile [ ! -e " + gate + " ]; do sleep 0.01; done\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	pids := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		done <- c.runLocal(context.Background(), r, Options{Binary: script, Env: []string{"PATH=" + os.Getenv("PATH")}, Log: io.Discard, Starter: pidStarter{pids}})
	}()
	pid := <-pids
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	// The child's environment, as written by the child itself.
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got, err = os.ReadFile(envOut); err == nil {
			break
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	argv := strings.ReplaceAll(string(cmdline), "\x00", " ")
	if !strings.Contains(argv, "run --spec ") {
		t.Fatalf("read the wrong process's command line: %q", argv)
	}
	for _, s := range []string{secretKey, secretPass, secretBody, secretEnv, secretArg} {
		if strings.Contains(argv, s) {
			t.Errorf("the child's command line holds %q: %q", s, argv)
		}
	}
	want := secretKey + "\nhttp://u:" + secretPass + "@127.0.0.1:9/v1\n{\"token\":\"" + secretBody + "\"}\n" +
		`["--engine-env=HF_TOKEN=` + secretEnv + `","--engine-arg=--api-key=` + secretArg + `"]` + "\n"
	if string(got) != want {
		t.Errorf("the child's environment gave\n%q\nwant\n%q", got, want)
	}
}

// On Slurm the job script exports the secrets and executes joulebench
// without them, and the script is readable by the user alone.
func TestSlurmScriptKeepsSecretsOutOfArgv(t *testing.T) {
	c := load(t, secretCampaign)
	r := c.Expand().Runs[0]
	s := c.JobScript(r, "/opt/joulebench", "/runs/x")
	exec := s[strings.Index(s, "\nexec "):]
	for _, sec := range []string{secretKey, secretPass, secretBody, secretEnv, secretArg} {
		if strings.Contains(exec, sec) {
			t.Errorf("the exec line holds %q:\n%s", sec, s)
		}
	}
	for _, want := range []string{"export JOULEBENCH_API_KEY=" + secretKey + "\n",
		"export JOULEBENCH_ENGINE_URL=http://u:" + secretPass + "@127.0.0.1:9/v1\n",
		"export JOULEBENCH_EXTRA_BODY='{\"token\":\"" + secretBody + "\"}'\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, "slurm"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context, name string, args ...string) ([]byte, error) { return []byte("42\n"), nil }
	job, err := c.submit(context.Background(), r, "/opt/joulebench", run)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(job.Script)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		t.Errorf("job script mode %v: others may read its secrets", m)
	}
}

// splitSecrets: both flag forms, a repeated flag's last value, an empty
// value kept as a flag, and everything after "--" left alone.
func TestSplitSecrets(t *testing.T) {
	argv, env := splitSecrets([]string{"run", "p", "--api-key", "a", "--set", "x=1", "--api-key=b", "--engine-url=", "--hf-endpoint", "https://h?t=1", "--", "--api-key", "c"})
	if want := []string{"run", "p", "--set", "x=1", "--engine-url=", "--", "--api-key", "c"}; !slices.Equal(argv, want) {
		t.Errorf("argv %q, want %q", argv, want)
	}
	if want := []string{"JOULEBENCH_API_KEY=b", "JOULEBENCH_HF_ENDPOINT=https://h?t=1"}; !slices.Equal(env, want) {
		t.Errorf("env %q, want %q", env, want)
	}
}

// The repeatable flags that may hold secrets travel as one JSON variable
// and come back after the subcommand: the flag parser then sees what the
// plan gave, values with spaces and "=" intact.
func TestSecretArgsRoundTrip(t *testing.T) {
	args := []string{"run", "p", "--engine-env", "HF_TOKEN=a b", "--set", "x=1", "--engine-arg=--api-key=k", "--dcgm-url", "http://u:p@h:9400/metrics", "--", "--engine-env", "kept"}
	argv, env := splitSecrets(args)
	if want := []string{"run", "p", "--set", "x=1", "--", "--engine-env", "kept"}; !slices.Equal(argv, want) {
		t.Fatalf("argv %q, want %q", argv, want)
	}
	if len(env) != 1 || !strings.HasPrefix(env[0], SecretArgsEnv+"=") {
		t.Fatalf("env %q, want one %s", env, SecretArgsEnv)
	}
	got, err := RestoreSecretArgs(argv, strings.TrimPrefix(env[0], SecretArgsEnv+"="))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"run", "--engine-env=HF_TOKEN=a b", "--engine-arg=--api-key=k", "--dcgm-url=http://u:p@h:9400/metrics", "p", "--set", "x=1", "--", "--engine-env", "kept"}
	if !slices.Equal(got, want) {
		t.Errorf("restored %q, want %q", got, want)
	}
	if _, err := RestoreSecretArgs(argv, `{"not":"a list"} s3cret`); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a bad value: %v, want an error that does not quote it", err)
	}
	if got, err := RestoreSecretArgs(argv, ""); err != nil || !slices.Equal(got, argv) {
		t.Errorf("unset: %q, %v", got, err)
	}
}
