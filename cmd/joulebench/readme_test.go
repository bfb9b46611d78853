package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// readmeCommand is one command of a ```sh block of README.md or a guide.
type readmeCommand struct {
	line int      // the page's line where it starts
	argv []string // the words, without a trailing > FILE
	out  string   // the file of a trailing > FILE
	exit int      // the exit code a trailing "# exit N" comment states (else 0)
	// heredoc is the body of `cat > FILE <<'EOF'`, written to out.
	heredoc *string
}

// readmeSkips are the docs' commands the test does not run, with why.
var readmeSkips = []struct{ prefix, why string }{
	{"go test ", "the test suite itself"},
	{"go install ", "needs the network (the module proxy); TestReadmeInstall checks the line"},
	{"GOBIN=$HOME/joulebench-kube go install ", "needs the network (the module proxy); TestReadmeInstall checks the line"},
	{"mv $HOME/joulebench-kube/joulebench ", "the Kubernetes build's install, above"},
	{"go build -tags kubernetes -o joulebench-kube ./cmd/joulebench", "the tests build joulebench-kube themselves (kubeHelperEnv) and run the Kubernetes commands through it"},
	{"joulebench sweep campaign.yaml --executor slurm", "needs a Slurm cluster (the sweep with Slurm has its own test on fake sbatch/squeue)"},
	{"joulebench sweep gpu.yaml --executor kubernetes --image", "needs a Kubernetes cluster with GPUs (the executor's tests run the simulator on CI's cluster)"},
	{"joulebench sweep examples/frontier.yaml", "five simulator runs: TestFrontierExample runs it"},
	{"joulebench sweep examples/slo.yaml", "about seven simulator runs: TestSLOSearchFindsConcurrency runs it"},
}

// readmeQuick are the parameters that shorten a simulator run in this
// test (each only where the profile has it): a few seconds instead of a
// minute, steady state still reachable (5-request windows).
var readmeQuick = []string{"baseline=1s", "release_hold=1s", "release_max_wait=8s", "sample_interval=100ms",
	"request_count=24", "warmup_requests=2", "max_tokens=64", "window=5", "cv_max=0.5"}

// docFiles are the pages whose runnable blocks TestReadmeCommands runs:
// README.md and every guide in docs/, as paths relative to the repository.
func docFiles(t *testing.T, repo string) []string {
	t.Helper()
	guides, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, g := range guides {
		rel, err := filepath.Rel(repo, g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	if len(files) < 6 {
		t.Fatalf("found %d pages (README.md and docs/*.md): the docs moved", len(files))
	}
	return files
}

// Every runnable command of the ```sh blocks of README.md and of each
// guide in docs/ runs as written, in order, each page in an empty
// directory of its own (the repository's archive/ and importer/ linked
// in), on the simulator, with shortened parameters appended to each run: it exits
// as the page says (0 unless a "# exit N" comment says otherwise), and a
// run prints a summary without FAIL that fits 100 columns and 25 lines.
// The commands that need GPUs, engines, a cluster or the network are
// skipped with their reason.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the docs' simulator runs (a few minutes)")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	total := 0
	pages := docFiles(t, repo)
	for _, page := range pages {
		t.Run(filepath.Base(page), func(t *testing.T) {
			ran[page] = runDocCommands(t, repo, page)
			total += ran[page]
		})
	}
	if len(ran) < len(pages) {
		return // -run chose some pages
	}
	// The README's main run and its sample analyze; in all, the guides'
	// examples too (workloads, campaigns, compare, profiles, import, ...).
	if ran["README.md"] < 2 || total < 15 {
		t.Errorf("only %d README commands and %d in all ran: the parser or the docs changed (%v)", ran["README.md"], total, ran)
	}
}

// runDocCommands runs the ```sh blocks of one page (a path relative to
// the repository) and returns how many joulebench commands ran.
func runDocCommands(t *testing.T, repo, page string) int {
	src, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := readmeCommands(page, string(src))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for _, d := range []string{"archive", "importer"} { // importer: its testdata
		if err := os.Symlink(filepath.Join(repo, d), d); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join("docs", "img"), 0o755); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, c := range cmds {
		text := strings.Join(c.argv, " ")
		if why := readmeSkip(c); why != "" {
			t.Logf("%s:%d: skipped (%s): %s", page, c.line, why, text)
			continue
		}
		if c.heredoc != nil {
			if err := os.WriteFile(c.out, []byte(*c.heredoc), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		args, kube := docArgs(c.argv)
		if args[0] == "run" {
			args = append(slices.Clone(args), readmeQuickSets(t, args[1])...)
		}
		var stdout, stderr string
		var code int
		if kube {
			stdout, stderr, code = runKubeCLI(t, args...)
		} else {
			stdout, stderr, code = runCLI(t, args...)
		}
		ran++
		if code != c.exit {
			t.Errorf("%s:%d: %s: exit %d, the page says %d\n%s\n%s", page, c.line, text, code, c.exit, stdout, stderr)
			continue
		}
		if c.out != "" {
			if err := os.WriteFile(c.out, []byte(stdout), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if args[0] == "run" {
			checkRunSummary(t, fmt.Sprintf("%s:%d", page, c.line), stdout)
		}
	}
	return ran
}

// checkRunSummary checks what a run prints: no FAIL, at most 25 lines of
// at most 100 columns.
func checkRunSummary(t *testing.T, where, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) > 25 || strings.Contains(out, "FAIL") {
		t.Errorf("%s: %d lines (at most 25), FAIL %v:\n%s", where, len(lines), strings.Contains(out, "FAIL"), out)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("%s: a line of %d columns: %q", where, n, l)
		}
	}
}

// readmeQuickSets returns readmeQuick's values that profile has.
func readmeQuickSets(t *testing.T, profile string) []string {
	t.Helper()
	a := newApp(&strings.Builder{}, &strings.Builder{})
	l, _, err := a.profiles().ReadLoad(profile, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range readmeQuick {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := l.Params[k]; ok {
			out = append(out, "--set", kv)
		}
	}
	return out
}

// docArgs are the joulebench arguments of a docs' command: after `go run
// ./cmd/joulebench`, or after `go run -tags kubernetes ./cmd/joulebench`
// (kube: the build with the Kubernetes client); nil for another command.
func docArgs(argv []string) (args []string, kube bool) {
	for _, p := range []struct {
		prefix []string
		kube   bool
	}{{[]string{"go", "run", "./cmd/joulebench"}, false}, {[]string{"go", "run", "-tags", "kubernetes", "./cmd/joulebench"}, true}} {
		if len(argv) > len(p.prefix) && slices.Equal(argv[:len(p.prefix)], p.prefix) {
			return argv[len(p.prefix):], p.kube
		}
	}
	return nil, false
}

// runKubeCLI runs joulebench's Kubernetes build with args in the current
// directory: in this process when the test binary is that build, else the
// test binary as main, which hands the command to joulebench-kube.
func runKubeCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	if kubernetesBuiltIn {
		return runCLI(t, args...)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = kubeChildEnv(t)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// readmeSkip says why a command is not run ("" when it is).
func readmeSkip(c readmeCommand) string {
	text := strings.Join(c.argv, " ")
	if c.heredoc != nil {
		return ""
	}
	for _, s := range readmeSkips {
		if strings.HasPrefix(text+" ", s.prefix) {
			return s.why
		}
	}
	if args, _ := docArgs(c.argv); len(args) == 0 {
		return "not a joulebench command the test knows: add it to readmeSkips with a reason"
	}
	for i, a := range c.argv {
		next := ""
		if i+1 < len(c.argv) {
			next = c.argv[i+1]
		}
		switch {
		case a == "--engine" && next != "sim", a == "--engine-url":
			return "needs an engine"
		case a == "--telemetry" && next != "sim" && next != "none" && next != "replay":
			return "needs a GPU or a power source"
		case a == "--dataset" && (next == "sharegpt" || strings.HasPrefix(next, "hf:")):
			return "needs the network"
		}
	}
	return ""
}

var exitComment = regexp.MustCompile(`^exit (\d+)\b`)

// readmeCommands parses the ```sh blocks of a page (named in errors):
// lines joined at a trailing backslash, comments dropped (a trailing
// "# exit N" kept as the expected exit code), `> FILE` and
// `cat > FILE <<'EOF'` here-documents understood.
func readmeCommands(page, readme string) ([]readmeCommand, error) {
	var out []readmeCommand
	lines := strings.Split(readme, "\n")
	in := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case !in && strings.TrimSpace(l) == "```sh":
			in = true
			continue
		case in && strings.TrimSpace(l) == "```":
			in = false
			continue
		case !in || strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#"):
			continue
		}
		start := i + 1
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(lines[i])
		}
		words, comment, err := shellWords(l)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", page, start, err)
		}
		c := readmeCommand{line: start, argv: words}
		if m := exitComment.FindStringSubmatch(comment); m != nil {
			c.exit, _ = strconv.Atoi(m[1])
		}
		if n := len(words); n >= 2 && words[n-2] == ">" {
			c.argv, c.out = words[:n-2], words[n-1]
		}
		if len(c.argv) == 4 && c.argv[0] == "cat" && c.argv[1] == ">" && strings.HasPrefix(c.argv[3], "<<") {
			end := strings.TrimPrefix(c.argv[3], "<<")
			c.out = c.argv[2]
			var body strings.Builder
			for i++; i < len(lines) && lines[i] != end; i++ {
				body.WriteString(lines[i] + "\n")
			}
			s := body.String()
			c.heredoc = &s
		}
		out = append(out, c)
	}
	return out, nil
}

// shellWords splits a command line as sh does for the README's simple
// commands: blanks, '…' and "…" quoting; an unquoted # after a blank
// starts the comment, returned apart.
func shellWords(s string) (words []string, comment string, err error) {
	var cur strings.Builder
	have := false
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, have = r, true
		case r == '#' && !have:
			return words, strings.TrimSpace(s[i+1:]), nil
		case r == ' ' || r == '\t':
			if have {
				words = append(words, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if quote != 0 {
		return nil, "", fmt.Errorf("unterminated quote in %q", s)
	}
	if have {
		words = append(words, cur.String())
	}
	return words, "", nil
}

// The README parser: continuation lines, quotes, comments, redirects and
// here-documents.
func TestReadmeCommandsParse(t *testing.T) {
	md := "text\n```sh\n# a comment\ngo run ./cmd/joulebench run a \\\n  --label 'x=y z'  # exit 3\ngo run ./cmd/joulebench profiles show b > my.yaml\ncat > f.yaml <<'EOF'\nk: \"v # not a comment\"\nEOF\n```\n```yaml\nnot: run\n```\n"
	cmds, err := readmeCommands("test.md", md)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, c := range cmds {
		h := ""
		if c.heredoc != nil {
			h = " heredoc=" + strconv.Quote(*c.heredoc)
		}
		got = append(got, fmt.Sprintf("%d %q out=%s exit=%d%s", c.line, c.argv, c.out, c.exit, h))
	}
	want := []string{
		`4 ["go" "run" "./cmd/joulebench" "run" "a" "--label" "x=y z"] out= exit=3`,
		`6 ["go" "run" "./cmd/joulebench" "profiles" "show" "b"] out=my.yaml exit=0`,
		`7 ["cat" ">" "f.yaml" "<<EOF"] out=f.yaml exit=0 heredoc="k: \"v # not a comment\"\n"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
