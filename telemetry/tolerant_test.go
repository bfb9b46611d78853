package telemetry_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// flaky answers its reads from a script: an error or a reading.
type flaky struct{ script []error }

func (f *flaky) Name() string { return "bmc" }
func (f *flaky) Devices(context.Context) ([]record.Device, error) {
	return []record.Device{{ID: "node0", Domain: record.DomainNode}}, nil
}
func (f *flaky) Read(context.Context) ([]telemetry.Reading, error) {
	err := f.script[0]
	f.script = f.script[1:]
	if err != nil {
		return nil, err
	}
	return []telemetry.Reading{{Device: "node0", PowerW: 500}}, nil
}
func (f *flaky) Close() error { return nil }

func TestTolerant(t *testing.T) {
	boom := errors.New("503 Service Unavailable")
	src := &flaky{script: []error{nil, boom, boom, nil, boom, boom, boom}}
	tol := telemetry.NewTolerant(src, 2, func() float64 { return 7 })
	// ok, fail, fail (2 in a row: tolerated), ok, fail, fail, fail (3: fatal).
	want := []string{"1", "0", "0", "1", "0", "0", "error"}
	for i, w := range want {
		rs, err := tol.Read(context.Background())
		got := "error"
		if err == nil {
			got = string(rune('0' + len(rs)))
		}
		if got != w {
			t.Fatalf("read %d: %d readings, %v; want %s", i+1, len(rs), err, w)
		}
		if w == "error" && (!errors.Is(err, boom) || !strings.Contains(err.Error(), "3 reads in a row failed")) {
			t.Errorf("error %v", err)
		}
	}
	as := tol.Anomalies()
	if len(as) != 4 || as[0].Kind != telemetry.AnomalyReadFailed || as[0].T != 7 || !strings.Contains(as[0].Detail, "telemetry bmc: read failed (1 in a row, at most 2 tolerated") {
		t.Errorf("anomalies %+v", as)
	}
}
