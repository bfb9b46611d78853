package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// badProfileFiles makes one path of each kind a profile argument must not
// be read from whole: a device, a symbolic link to one, a FIFO (no writer:
// a read would block), a directory, and a sparse regular file far over the
// size cap (reading it would exhaust memory). It returns name → path and,
// for each, what the error must say.
func badProfileFiles(t *testing.T) (map[string]string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	devLink := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", devLink); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir.yaml")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil { // sparse: 8 GiB that take no disk
		t.Skipf("sparse file: %v", err)
	}
	f.Close()
	paths := map[string]string{"/dev/zero": "/dev/zero", "symlink to /dev/zero": devLink, "FIFO": fifo, "directory": sub, "8 GiB file": huge}
	want := map[string]string{"/dev/zero": "a character device", "symlink to /dev/zero": "a character device",
		"FIFO": "a named pipe", "directory": "a directory", "8 GiB file": "8589934592 bytes, more than"}
	return paths, want
}

// Every way a profile file is named (validate's argument, extends:,
// analyze --profile, a campaign's profile:, and the campaign file itself)
// refuses a file that is no regular file or is over the cap, with an
// invalid-input exit code and the kind in words, instead of reading it
// until memory runs out or blocking on a FIFO.
func TestProfileFileKindsRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("devices and FIFOs are unix files")
	}
	paths, want := badProfileFiles(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	entries := []struct {
		name string
		args func(kind, path string) []string
	}{
		{"validate FILE", func(_, p string) []string { return []string{"validate", p} }},
		{"extends: FILE", func(k, p string) []string {
			return []string{"validate", write(strings.ReplaceAll(k, "/", "_")+"-child.yaml", fmt.Sprintf("extends: %q\nname: child\n", p))}
		}},
		{"analyze --profile FILE", func(_, p string) []string { return []string{"analyze", smallRun, "--profile", p} }},
		{"campaign profile: FILE", func(k, p string) []string {
			return []string{"validate", write(strings.ReplaceAll(k, "/", "_")+"-campaign.yaml",
				fmt.Sprintf("name: t\nprofile: %q\nout: out\nmatrix:\n  engine: [{kind: sim}]\n", p))}
		}},
		{"sweep --dry-run CAMPAIGN", func(_, p string) []string { return []string{"sweep", "--dry-run", p} }},
	}
	for _, e := range entries {
		for kind, p := range paths {
			t.Run(e.name+"/"+kind, func(t *testing.T) {
				out, errOut, code := runCLI(t, e.args(kind, p)...)
				if code != exitInvalid {
					t.Fatalf("exit code %d, want %d\n%s%s", code, exitInvalid, out, errOut)
				}
				if !strings.Contains(errOut, want[kind]) || !strings.Contains(errOut, filepath.Base(p)) {
					t.Errorf("error does not name the file and say %q:\n%s", want[kind], errOut)
				}
			})
		}
	}
}

// validate and sweep --dry-run refuse a campaign whose runs would all be
// refused, or which would expand past the bound, at the position of the
// value and with an invalid-input exit code.
func TestCampaignValidateRefuses(t *testing.T) {
	head := "name: t\nprofile: benchmark-1.5\nout: out\n"
	for _, tc := range []struct{ name, src, want string }{
		{"unknown engine kind", head + "matrix:\n  engine: [{kind: nosuch}]\n", `campaign.yaml:5:19: matrix.engine[0].kind: unknown engine kind "nosuch"`},
		{"bogus telemetry", head + "matrix: {engine: [{kind: sim}]}\nargs: [--telemetry, bogus]\n", `campaign.yaml:5:7: args: --telemetry "bogus": valid are auto`},
		{"--out", head + "matrix: {engine: [{kind: sim}]}\nargs: [--out, X]\n", "campaign.yaml:5:8: args[0]: --out is set by the sweep"},
		{"unknown flag", head + "matrix:\n  engine: [{kind: sim, args: [--nosuch]}]\n", "campaign.yaml:5:30: matrix.engine[0].args: unknown flag: --nosuch"},
		{"flag without value", head + "matrix: {engine: [{kind: sim}]}\nargs: [--seed]\n", "args: flag needs an argument: --seed"},
		{"bad flag value", head + "matrix: {engine: [{kind: sim}]}\nargs: [--seed, x]\n", `args: invalid argument "x" for "--seed"`},
		{"--engine nosuch", head + "matrix:\n  scenario: [{name: s, args: [--engine, nosuch]}]\n", `matrix.scenario[0].args: --engine "nosuch": valid are`},
		{"--dataset-format nosuch", head + "matrix: {}\nargs: [--dataset-format, nosuch]\n", `args: --dataset-format "nosuch": valid are sharegpt`},
		{"a positional argument", head + "matrix: {}\nargs: [benchmark-1.0]\n", `args: "benchmark-1.0" is not a flag`},
		{"a billion repetitions", head + "repetitions: 1000000000\nmatrix: {engine: [{kind: sim}]}\n", "campaign.yaml:4:14: repetitions: the campaign expands to more than 10000 runs (1000000000 repetitions)"},
	} {
		for _, cmd := range [][]string{{"validate"}, {"sweep", "--dry-run"}} {
			t.Run(tc.name+"/"+cmd[0], func(t *testing.T) {
				p := filepath.Join(t.TempDir(), "campaign.yaml")
				if err := os.WriteFile(p, []byte(tc.src), 0o644); err != nil {
					t.Fatal(err)
				}
				out, errOut, code := runCLI(t, append(cmd, p)...)
				if code != exitInvalid || !strings.Contains(errOut, tc.want) {
					t.Fatalf("exit code %d, want %d and %q\n%s%s", code, exitInvalid, tc.want, out, errOut)
				}
			})
		}
	}
	// The same flags, valid, pass.
	p := filepath.Join(t.TempDir(), "campaign.yaml")
	good := head + "matrix:\n  engine: [{kind: sim, args: [--seed, \"3\"]}]\nargs: [--telemetry, sim, --dataset-format, jsonl, --set, request_count=20, --log-level, debug]\n"
	if err := os.WriteFile(p, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runCLI(t, "validate", p); code != exitOK {
		t.Errorf("a good campaign refused: exit %d\n%s%s", code, out, errOut)
	}
}

// With the simulator (counting a prompt's characters / 4), random prompts
// were served at about 1.3 tokens a word: 200 asked gave about 260. Now
// every formal request's prompt_tokens is the length asked to within 3
// tokens (a prompt is cut at a word; the longest random word with its
// space is 8 characters, 2 of the simulator's tokens), run.json says the
// method, and the results show the mean served.
func TestSimRandomPromptLengths(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	_, errOut, code := runCLI(t, "run", "benchmark-1.0", "--out", out, "--no-progress", "--dataset", "random",
		"--random-input-len", "200", "--set", "request_count=20", "--set", "baseline=1s", "--set", "window=5")
	if code != exitOK && code != exitChecks {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	run := loadRun(t, out)
	if m := run.Meta.RequestSet.LengthMethod; m != "tokenize" {
		t.Errorf("length_method %q", m)
	}
	sum, n := 0, 0
	for _, r := range run.Requests {
		if r.Phase == "formal" && r.OK {
			sum += r.PromptTokens
			n++
			if r.PromptTokens < 197 || r.PromptTokens > 203 {
				t.Errorf("request %s: %d prompt tokens served, 200 asked", r.ID, r.PromptTokens)
			}
		}
	}
	if m := run.Results.Values["mean_prompt_tokens"]; n == 0 || toFloat(m.Value) != float64(sum)/float64(n) {
		t.Errorf("mean_prompt_tokens %+v, want %d/%d", m, sum, n)
	}
}
