package ssebench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The server child prints its address, serves, and returns 0 when its
// standard input closes.
func TestRunChildServer(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	code := make(chan int, 1)
	go func() { code <- RunChild(ServerSpec(0, 0, 8), inR, outW, io.Discard) }()
	addr, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + strings.TrimSpace(addr) + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/v1/models: %s", resp.Status)
	}
	inW.Close()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit code %d, want 0", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server child did not end when its stdin closed")
	}
}

func TestRunChildMinimal(t *testing.T) {
	srv, err := Start(context.Background(), "127.0.0.1:0", Config{Batch: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var out bytes.Buffer
	if c := RunChild(MinimalSpec(srv.URL(), 3, 100), strings.NewReader(""), &out, io.Discard); c != 0 {
		t.Fatalf("exit code %d", c)
	}
	var res MinimalResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Tokens != 300 {
		t.Errorf("result %s (%v), want 300 tokens", out.Bytes(), err)
	}
}

func TestRunChildBadSpecs(t *testing.T) {
	for _, spec := range []string{"", "server:1,2", "server:a,b,c", "minimal:http://x,1", "other:1"} {
		var errOut bytes.Buffer
		if c := RunChild(spec, strings.NewReader(""), io.Discard, &errOut); c != 1 || !strings.Contains(errOut.String(), "ssebench child:") {
			t.Errorf("RunChild(%q) = %d, %q; want 1 and an error", spec, c, errOut.String())
		}
	}
}
