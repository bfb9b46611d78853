// Package enginetest is the scaffolding the engine packages' tests share:
// a test binary that doubles as a fake engine executable (Main, with
// engines/process/processtest), starting an engine and waiting until it
// serves (StartReady), reading what the fake was launched with
// (Launched), one scrape of an engine's /metrics (Scrape), a log writer
// safe for the engine's output goroutines (Log), and receive stamps held
// on for the tests that need them (HoldStampsOn).
package enginetest

import (
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/internal/streamcore"
	"github.com/joulebench/joulebench/engines/process/processtest"
	"github.com/joulebench/joulebench/engines/prom"
)

// Main is an engine package's TestMain: the test binary runs as a fake
// engine when a test started it as one (processtest.Fake), else it runs
// the tests.
func Main(m *testing.M) {
	processtest.MaybeRunFake()
	os.Exit(m.Run())
}

// StartReady starts e and waits until it serves (at most ready), failing
// the test otherwise; the engine is stopped (grace 2 s) when the test
// ends.
func StartReady(t testing.TB, e engines.Engine, ready time.Duration) {
	t.Helper()
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.Stop(ctx, 2*time.Second) })
	if err := e.WaitReady(ctx, ready); err != nil {
		t.Fatal(err)
	}
}

// Launched is what the fake engine was started with (the arguments and
// environment it wrote to file, processtest.Fake.ArgvFile).
func Launched(t testing.TB, file string) processtest.Record {
	t.Helper()
	rec, err := processtest.ReadRecord(file)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// Scrape scrapes the /metrics at url once for families and returns the
// names of the samples kept, in the order they came, and the scraper's
// warnings.
func Scrape(t testing.TB, url func() string, families []string) (names, warnings []string) {
	t.Helper()
	sc := prom.New(prom.Config{URL: url, Families: families, Warn: func(s string) { warnings = append(warnings, s) },
		Sink: func(ms []record.EngineMetric) error {
			for _, m := range ms {
				names = append(names, m.Name)
			}
			return nil
		}})
	if err := sc.ScrapeNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	return names, warnings
}

// Log collects an engine's output (engine.log), written from the
// engine's own goroutines.
type Log struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is what was written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// HoldStampsOn keeps one connection of the streaming transport open until
// the test ends, having seen it receive stamped data. Linux turns receive
// stamps on for the whole system shortly after the first socket asks for
// them and off after the last one closes, so a fresh socket's first
// packets may carry none. The test fails where the transport keeps no
// stamps (call it on Linux only).
func HoldStampsOn(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go echo(ln)
	c, err := streamcore.NewTransport().DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := streamcore.StamperOf(c)
	if s == nil {
		t.Fatalf("%T keeps no receive stamps", c)
	}
	b := make([]byte, 1)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(b); err != nil {
			t.Fatal(err)
		}
		if s.LastReceived() != 0 {
			return
		}
	}
	t.Fatal("the kernel stamped nothing in 5s")
}

// echo answers every byte of the first connection to ln with itself.
func echo(ln net.Listener) {
	c, err := ln.Accept()
	if err != nil {
		return
	}
	defer c.Close()
	b := make([]byte, 1)
	for {
		if _, err := c.Read(b); err != nil {
			return
		}
		if _, err := c.Write(b); err != nil {
			return
		}
	}
}
