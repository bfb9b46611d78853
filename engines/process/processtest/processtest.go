// Package processtest turns a test binary into a fake engine server, so
// that the launch, readiness, identity, metrics and stop code of the
// managed engines is tested against a real process serving recorded
// responses, with no engine installed.
//
// A package's TestMain calls MaybeRunFake first; when the environment says
// so (Fake.Env), the binary serves the routes on 127.0.0.1 at the port its
// command line or OLLAMA_HOST names, writes its argv and environment
// overrides to a file, and never returns.
package processtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// envVar carries the JSON of a Fake to the child process.
const envVar = "JOULEBENCH_FAKE_ENGINE"

// Route is one recorded answer.
type Route struct {
	Status int    `json:"status,omitempty"` // default 200
	Body   string `json:"body"`
	// ContentType defaults to application/json (text/plain for /metrics).
	ContentType string `json:"content_type,omitempty"`
}

// Fake is the behaviour of the fake engine.
type Fake struct {
	// Routes by "METHOD /path" or "/path" (any method).
	Routes map[string]Route `json:"routes"`
	// HealthPath answers 503 until ReadyAfter has passed (default
	// "/health").
	HealthPath string        `json:"health_path,omitempty"`
	ReadyAfter time.Duration `json:"ready_after,omitempty"`
	// NeverListen: the process runs but serves nothing.
	NeverListen bool `json:"never_listen,omitempty"`
	// ExitAfter > 0: the process exits on its own with status 7 after this
	// long, writing "fatal: simulated engine crash" to stderr.
	ExitAfter time.Duration `json:"exit_after,omitempty"`
	// IgnoreTerm: SIGTERM is ignored (Stop must SIGKILL).
	IgnoreTerm bool `json:"ignore_term,omitempty"`
	// ArgvFile receives {"argv": [...], "env": {...}} once started.
	ArgvFile string `json:"argv_file,omitempty"`
	// EnvKeys are the environment variables copied into ArgvFile.
	EnvKeys []string `json:"env_keys,omitempty"`
	// EscapeFile, when set, makes the fake daemonize as some servers do:
	// once listening it starts a copy of itself in a new session (setsid,
	// out of its process group) that serves the same listening socket
	// until SIGTERM, and writes that copy's pid to EscapeFile. The fake
	// itself exits on SIGTERM as usual; the copy does not get the group's
	// signal. (Unix only.)
	EscapeFile string `json:"escape_file,omitempty"`
	// Escaped marks the copy (set by the fake).
	Escaped bool `json:"escaped,omitempty"`
}

// Env is the environment entry that makes a test binary act as f.
func (f Fake) Env() (string, string) {
	b, err := json.Marshal(f)
	if err != nil {
		panic(err)
	}
	return envVar, string(b)
}

// Record is what the fake wrote to ArgvFile.
type Record struct {
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env"`
}

// ReadRecord reads ArgvFile, waiting up to 5 s for it.
func ReadRecord(path string) (Record, error) {
	var r Record
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && len(b) > 0 {
			return r, json.Unmarshal(b, &r)
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("fake engine wrote no %s", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// MaybeRunFake runs the fake engine and exits when the environment asks
// for it; otherwise it returns at once.
func MaybeRunFake() {
	spec := os.Getenv(envVar)
	if spec == "" {
		return
	}
	var f Fake
	if err := json.Unmarshal([]byte(spec), &f); err != nil {
		fmt.Fprintln(os.Stderr, "fake engine:", err)
		os.Exit(2)
	}
	os.Exit(run(f))
}

func run(f Fake) int {
	fmt.Println("fake engine: starting", strings.Join(os.Args[1:], " "))
	if f.ArgvFile != "" {
		rec := Record{Argv: os.Args, Env: map[string]string{}}
		for _, k := range f.EnvKeys {
			if v, ok := os.LookupEnv(k); ok {
				rec.Env[k] = v
			}
		}
		b, _ := json.Marshal(rec)
		_ = os.WriteFile(f.ArgvFile+".tmp", b, 0o644)
		_ = os.Rename(f.ArgvFile+".tmp", f.ArgvFile)
	}
	sigs := make(chan os.Signal, 1)
	if f.IgnoreTerm {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	}
	var crash <-chan time.Time
	if f.ExitAfter > 0 {
		crash = time.After(f.ExitAfter)
	}
	if !f.NeverListen {
		ln, err := listen(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake engine: listen:", err)
			return 3
		}
		if f.EscapeFile != "" && !f.Escaped {
			if err := escape(f, ln); err != nil {
				fmt.Fprintln(os.Stderr, "fake engine: escape:", err)
				return 4
			}
		}
		srv := &http.Server{Handler: handler(f), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		}()
		fmt.Println("fake engine: listening on", ln.Addr())
	}
	select {
	case s := <-sigs:
		fmt.Println("fake engine: got", s, "- shutting down")
		return 0
	case <-crash:
		fmt.Fprintln(os.Stderr, "fatal: simulated engine crash")
		return 7
	}
}

// listen opens the fake's listening socket: the one its parent passed
// down (the escaped copy: file descriptor 3), else 127.0.0.1 at the port
// of its command line.
func listen(f Fake) (net.Listener, error) {
	if f.Escaped {
		return net.FileListener(os.NewFile(3, "listener"))
	}
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(portOf(os.Args[1:]))))
}

// portOf finds the port in --port P / --port=P, or OLLAMA_HOST.
func portOf(args []string) int {
	for i, a := range args {
		if a == "--port" && i+1 < len(args) {
			p, _ := strconv.Atoi(args[i+1])
			return p
		}
		if v, ok := strings.CutPrefix(a, "--port="); ok {
			p, _ := strconv.Atoi(v)
			return p
		}
	}
	if h := os.Getenv("OLLAMA_HOST"); h != "" {
		if _, p, err := net.SplitHostPort(h); err == nil {
			n, _ := strconv.Atoi(p)
			return n
		}
	}
	return 0
}

func handler(f Fake) http.Handler {
	start := time.Now()
	health := f.HealthPath
	if health == "" {
		health = "/health"
	}
	var hits atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == health && time.Since(start) < f.ReadyAfter {
			http.Error(w, `{"error":"loading model"}`, http.StatusServiceUnavailable)
			return
		}
		rt, ok := f.Routes[r.Method+" "+r.URL.Path]
		if !ok {
			rt, ok = f.Routes[r.URL.Path]
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		ct := rt.ContentType
		if ct == "" {
			ct = "application/json"
			if r.URL.Path == "/metrics" {
				ct = "text/plain; version=0.0.4"
			}
		}
		w.Header().Set("Content-Type", ct)
		if rt.Status != 0 {
			w.WriteHeader(rt.Status)
		}
		_, _ = w.Write([]byte(rt.Body))
	})
}

// File reads a testdata file for a Route body; it panics when missing.
func File(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}
