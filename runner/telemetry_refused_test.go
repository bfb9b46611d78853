package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// A power source that refuses to open as invalid input (exit 2: an agent
// without its token, a refused token, a clock too slow or a day off)
// fails the run before anything is measured: its run directory is
// removed, as every other check of a run's inputs leaves nothing. A
// source that fails otherwise keeps the archive (TestRunTelemetryFails).
func TestRunTelemetryRefusedLeavesNoDirectory(t *testing.T) {
	var msgs syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	bad := errors.New("agent http://127.0.0.1:1/v1/devices refused the token")
	s.OpenTelemetry = func(context.Context, TelemetryEnv) (telemetry.Source, record.TelemetryInfo, error) {
		return nil, record.TelemetryInfo{}, WithCode(CodeInvalid, bad)
	}
	res, err := Run(context.Background(), s)
	if !errors.Is(err, bad) || CodeOf(err) != CodeInvalid {
		t.Fatalf("error %v (code %d)", err, CodeOf(err))
	}
	if _, err := os.Stat(s.Out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused run left %s (%v)", s.Out, err)
	}
	if res == nil || len(res.Dirs) != 1 || res.Dirs[0] != "" {
		t.Errorf("result %+v: a run without a directory names none", res)
	}
}
