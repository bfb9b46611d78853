package ssebench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ChildEnv, set in a child process's environment, makes the program that
// calls RunChild from its start (a test binary's TestMain or test) that
// child instead:
//
//	server:FIRST_MS,GAP_MS,BATCH  serve on 127.0.0.1, print the address as
//	                              the first line of stdout, and serve until
//	                              stdin closes
//	minimal:URL,STREAMS,TOKENS    run the minimal client once and print its
//	                              MinimalResult as JSON
const ChildEnv = "JOULEBENCH_SSEBENCH_CHILD"

// ServerSpec is the ChildEnv value of a server child.
func ServerSpec(first, gap time.Duration, batch int) string {
	return fmt.Sprintf("server:%d,%d,%d", first.Milliseconds(), gap.Milliseconds(), batch)
}

// MinimalSpec is the ChildEnv value of a minimal-client child.
func MinimalSpec(url string, streams, tokens int) string {
	return fmt.Sprintf("minimal:%s,%d,%d", url, streams, tokens)
}

// RunChild runs the child that spec (ChildEnv's value) names and returns
// its exit code.
func RunChild(spec string, stdin io.Reader, stdout, stderr io.Writer) int {
	if err := runChild(spec, stdin, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "ssebench child:", err)
		return 1
	}
	return 0
}

func runChild(spec string, stdin io.Reader, stdout, stderr io.Writer) error {
	mode, args, _ := strings.Cut(spec, ":")
	f := strings.Split(args, ",")
	if _, err := RaiseFileLimit(); err != nil {
		fmt.Fprintln(stderr, "ssebench child: open-file limit:", err)
	}
	switch mode {
	case "server":
		n, err := ints(f, 3)
		if err != nil {
			return fmt.Errorf("server spec %q: %w", spec, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		srv, err := Start(ctx, "127.0.0.1:0", Config{First: time.Duration(n[0]) * time.Millisecond, Gap: time.Duration(n[1]) * time.Millisecond, Batch: n[2]})
		if err != nil {
			return err
		}
		defer srv.Close()
		if _, err := fmt.Fprintln(stdout, srv.Addr()); err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, stdin) // until the parent closes it
		return nil
	case "minimal":
		if len(f) != 3 {
			return fmt.Errorf("minimal spec %q: want minimal:URL,STREAMS,TOKENS", spec)
		}
		n, err := ints(f[1:], 2)
		if err != nil {
			return fmt.Errorf("minimal spec %q: %w", spec, err)
		}
		res, err := RunMinimal(context.Background(), f[0], n[0], n[1])
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(res)
	}
	return fmt.Errorf("spec %q: want server:FIRST_MS,GAP_MS,BATCH or minimal:URL,STREAMS,TOKENS", spec)
}

func ints(f []string, want int) ([]int, error) {
	if len(f) != want {
		return nil, fmt.Errorf("%d numbers, want %d", len(f), want)
	}
	out := make([]int, want)
	for i, s := range f {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("%q: want an integer", s)
		}
		out[i] = n
	}
	return out, nil
}
