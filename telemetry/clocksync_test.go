package telemetry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// clocked is a source on another clock: its entry, and an end error when
// failEnd.
type clocked struct {
	telemetry.Source
	name    string
	failEnd bool
}

func (c clocked) Name() string { return c.name }
func (c clocked) ClockSync(_ context.Context, end bool) ([]record.ClockSync, error) {
	cs := record.ClockSync{Source: c.name, StartOffsetS: 1}
	if end && c.failEnd {
		return []record.ClockSync{cs}, errors.New("unreachable")
	}
	if end {
		e := 1.01
		cs.EndOffsetS = &e
	}
	return []record.ClockSync{cs}, nil
}

// Multi forwards the entries of the sources on other clocks, in order,
// and names the source whose end failed.
func TestMultiClockSync(t *testing.T) {
	m := telemetry.NewMulti(nil, clocked{telemetry.NewNone(), "a", false}, telemetry.NewNone(), clocked{telemetry.NewNone(), "b", true})
	cs, err := m.ClockSync(context.Background(), true)
	if len(cs) != 2 || cs[0].Source != "a" || cs[0].EndOffsetS == nil || cs[1].Source != "b" || cs[1].EndOffsetS != nil {
		t.Errorf("entries %+v", cs)
	}
	if err == nil || err.Error() != "b: unreachable" {
		t.Errorf("error %v, want b: unreachable", err)
	}
}

// Sources read side by side keep each one's clock_sync entries in
// run.json's telemetry info.
func TestSideBySideKeepsClockSync(t *testing.T) {
	r := telemetry.NewRegistry("")
	for _, n := range []string{"p", "q"} {
		if err := r.Register(telemetry.Descriptor{Name: n, Open: func(context.Context, telemetry.Values, telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
			return clocked{telemetry.NewNone(), n, false}, record.TelemetryInfo{Source: n, ClockSync: []record.ClockSync{{Source: n, StartOffsetS: 2}}}, nil
		}}); err != nil {
			t.Fatal(err)
		}
	}
	sel, err := r.Select([]string{"p", "q"})
	if err != nil {
		t.Fatal(err)
	}
	src, info, err := r.Open(context.Background(), sel, nil, telemetry.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if len(info.ClockSync) != 2 || info.ClockSync[0].Source != "p" || info.ClockSync[1].Source != "q" {
		t.Errorf("clock_sync %+v", info.ClockSync)
	}
}
