package sim

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestActivityRoundTrip: what WriteActivity writes, ParseActivity reads
// back (the engine's other families beside it skipped).
func TestActivityRoundTrip(t *testing.T) {
	want := Activity{Phase: PhaseReady, Running: 3, Prefilling: 1, Slots: 8, MemFrac: 0.9}
	var b bytes.Buffer
	b.WriteString("# TYPE sim:num_requests_running gauge\nsim:num_requests_running{model_name=\"m\"} 4\nsim:num_slots{model_name=\"m\"} 8\n")
	if err := WriteActivity(&b, want, `model_name="m"`); err != nil {
		t.Fatal(err)
	}
	got, err := ParseActivity(&b)
	if err != nil || got != want {
		t.Fatalf("ParseActivity = %+v, %v; want %+v", got, err, want)
	}
}

func TestParseActivityErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"no phase", "vllm:num_requests_running 3\n", "no sim:engine_phase at 1"},
		{"bad value", "sim:num_requests_decoding{} x\n", `value "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseActivity(strings.NewReader(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRemoteFollowsEngine: off before the engine answers, its activity
// while it does, off again once it is gone.
func TestRemoteFollowsEngine(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = WriteActivity(w, Activity{Phase: PhaseLoading, MemFrac: 0.5}, "")
	}))
	defer srv.Close()
	var r Remote
	if a := r.Activity(); a.Phase != PhaseOff {
		t.Fatalf("before any reading: %+v, want off", a)
	}
	a, err := ReadActivity(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	r.Set(a)
	if a := r.Activity(); a.Phase != PhaseLoading || a.MemFrac != 0.5 {
		t.Fatalf("while polling: %+v, want loading at 0.5", a)
	}
	r.Gone()
	if a := r.Activity(); a.Phase != PhaseOff {
		t.Fatalf("after Gone: %+v, want off", a)
	}
	r.Set(a) // a late reading
	if a := r.Activity(); a.Phase != PhaseOff {
		t.Fatalf("after Gone and a last reading: %+v, want off", a)
	}
	r2 := Remote{}
	r2.Set(Activity{}) // a failed read
	if a := r2.Activity(); a.Phase != PhaseOff {
		t.Fatalf("failed read: %+v, want off", a)
	}
}

// An engine on the hardware model tells its steps' energy, busy time,
// clock and cap state through /metrics too, so GPUs that follow it
// remotely (an agent's) draw what it ran.
func TestActivityRoundTripHW(t *testing.T) {
	want := Activity{Phase: PhaseReady, Running: 64, MemFrac: 0.9, HW: true, HWEnergyJ: 12345.5, HWBusyS: 61.25, ClockMHz: 1980, PowerCapped: true}
	var b bytes.Buffer
	if err := WriteActivity(&b, want, ""); err != nil {
		t.Fatal(err)
	}
	got, err := ParseActivity(&b)
	if err != nil || got != want {
		t.Fatalf("ParseActivity = %+v, %v; want %+v", got, err, want)
	}
	b.Reset()
	if err := WriteActivity(&b, Activity{Phase: PhaseReady}, ""); err != nil || strings.Contains(b.String(), FamilyHWEnergy) {
		t.Errorf("the toy model's engine writes no hardware-model family: %v\n%s", err, b.String())
	}
}

// Follow polls the engine's /metrics: its activity while it answers, off
// when it does not; an empty URL is GPUs with no engine.
func TestFollowPollsTheEngine(t *testing.T) {
	up := make(chan bool, 1)
	up <- true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ok := <-up
		up <- ok
		if !ok {
			http.Error(w, "gone", http.StatusServiceUnavailable)
			return
		}
		_ = WriteActivity(w, Activity{Phase: PhaseReady, Running: 7, HW: true, HWEnergyJ: 10}, "")
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := Follow(ctx, srv.Client(), srv.URL, 10*time.Millisecond)
	waitFor := func(what string, ok func(Activity) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok(r.Activity()) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: activity %+v", what, r.Activity())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("the engine's activity", func(a Activity) bool { return a.Running == 7 && a.HW && a.HWEnergyJ == 10 })
	<-up
	up <- false
	waitFor("off while it does not answer", func(a Activity) bool { return a.Phase == PhaseOff })
	if a := Follow(ctx, srv.Client(), "", time.Millisecond).Activity(); a.Phase != PhaseOff {
		t.Errorf("no engine: %+v, want off", a)
	}
}
