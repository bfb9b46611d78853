package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchServerEnv, when set in the environment of the test binary, turns it
// into the stream server of the benchmarks, in its own process as an
// inference engine is: "FIRST_MS,GAP_MS,BATCH" (GAP_MS 0: unpaced, BATCH
// tokens per write). It prints its address, serves
// until its standard input closes, then exits.
const benchServerEnv = "JOULEBENCH_BENCH_STREAM_SERVER"

// benchServerCPUEnv, when set (a CPU number), pins the benchmarks' child
// server process to that CPU where the system allows it (Linux), so that
// running the client under `taskset -c N` keeps the two apart.
const benchServerCPUEnv = "JOULEBENCH_BENCH_SERVER_CPU"

func TestMain(m *testing.M) {
	if spec := os.Getenv(benchServerEnv); spec != "" {
		os.Exit(runBenchServer(spec))
	}
	os.Exit(m.Run())
}

// wallClock is Unix time from the wall clock, which two processes on one
// machine share.
func wallClock() float64 { return float64(time.Now().UnixNano()) / 1e9 }

func runBenchServer(spec string) int {
	var firstMS, gapMS, batch int
	if _, err := fmt.Sscanf(spec, "%d,%d,%d", &firstMS, &gapMS, &batch); err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return 2
	}
	if cpu := os.Getenv(benchServerCPUEnv); cpu != "" {
		n, err := strconv.Atoi(cpu)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench server cpu:", err)
			return 2
		}
		if err := pinProcess(n); err != nil {
			fmt.Fprintln(os.Stderr, "bench server: pin to cpu", n, err)
		}
	}
	srv := startBatchServer(&serverTB{}, wallClock, time.Duration(firstMS)*time.Millisecond, time.Duration(gapMS)*time.Millisecond, true, batch)
	fmt.Println(srv.ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark closes it
	return 0
}

// serverTB is the little of testing.TB that startStreamServer uses, for the
// server process (which has no test running).
type serverTB struct{ testing.TB }

func (serverTB) Fatal(args ...any) { fmt.Fprintln(os.Stderr, args...); os.Exit(1) }
func (serverTB) Cleanup(func())    {}
func (serverTB) Helper()           {}

// procServer is the paced stream server in a child process.
type procServer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
}

func startProcServer(tb testing.TB, first, gap time.Duration) *procServer {
	tb.Helper()
	return startProcServerBatch(tb, first, gap, 1)
}

// startProcServerBatch is startProcServer whose unpaced streams (gap 0)
// write batch tokens per write.
func startProcServerBatch(tb testing.TB, first, gap time.Duration, batch int) *procServer {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%d,%d", benchServerEnv, first.Milliseconds(), gap.Milliseconds(), batch))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		tb.Fatalf("bench server: %v", err)
	}
	ps := &procServer{cmd: cmd, stdin: stdin, addr: strings.TrimSpace(addr)}
	tb.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	return ps
}

func (p *procServer) url() string { return "http://" + p.addr }

// writes fetches the server's write times by bench id.
func (p *procServer) writes(ctx context.Context) (map[int][]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url()+"/writes", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out map[int][]float64
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("bench server writes: %w", err)
	}
	return out, nil
}

// arrived is the number of requests the server has read.
func (p *procServer) arrived(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url()+"/arrived", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(b), 10, 64)
}
