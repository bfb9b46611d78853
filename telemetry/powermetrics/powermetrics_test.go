package powermetrics

import (
	"context"
	"errors"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulebench/joulebench/telemetry"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func parseFile(t *testing.T, path, format string) []Sample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Sample
	if err := Parse(f, format, func(s Sample) error { out = append(out, s); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func powerOnly(ss []Sample) []Sample {
	var out []Sample
	for _, s := range ss {
		if s.HasPower {
			out = append(out, s)
		}
	}
	return out
}

// Text: power in mW, energy = power × the header's elapsed time.
func TestParseText(t *testing.T) {
	all := parseFile(t, "testdata/gpu_power.txt", FormatText)
	got := powerOnly(all)
	want := []struct{ w, s float64 }{
		{21.340, 0.50231}, // 21.340 W × 0.50231 s = 10.7192954 J
		{22.105, 0.50087}, // 22.105 W × 0.50087 s = 11.07173135 J
		{3.120, 0.50102},  //  3.120 W × 0.50102 s =  1.5631824 J
	}
	if len(got) != len(want) {
		t.Fatalf("%d power samples, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if !near(g.PowerW, w.w) || !near(g.ElapsedS, w.s) || !near(g.EnergyJ, w.w*w.s) || g.Field != "GPU Power" || g.HWModel != "Mac14,6" {
			t.Errorf("sample %d = %+v, want %v W over %v s", i, g, w.w, w.s)
		}
	}
	var levels []string
	for _, s := range all {
		if s.Thermal != "" {
			levels = append(levels, s.Thermal)
		}
	}
	if strings.Join(levels, ",") != "Nominal,Moderate,Nominal" {
		t.Errorf("thermal levels = %v", levels)
	}
}

// Plist: gpu.gpu_energy (mJ) over elapsed_ns.
func TestParsePlist(t *testing.T) {
	got := parseFile(t, "testdata/gpu_power.plist", FormatPlist)
	want := []struct {
		mj, s   float64
		thermal string
	}{
		{10670, 0.5, "Nominal"},    // 10.670 J / 0.5 s = 21.34 W
		{11053, 0.5, "Heavy"},      // 11.053 J / 0.5 s = 22.106 W
		{1563, 0.50102, "Nominal"}, // 1.563 J / 0.50102 s = 3.1196359 W
	}
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if !g.HasPower || !near(g.EnergyJ, w.mj/1000) || !near(g.ElapsedS, w.s) || !near(g.PowerW, w.mj/1000/w.s) ||
			g.Field != "gpu.gpu_energy" || g.Thermal != w.thermal || g.HWModel != "Mac14,6" {
			t.Errorf("sample %d = %+v, want %v mJ over %v s, %s", i, g, w.mj, w.s, w.thermal)
		}
	}
}

func TestParsePlistVariants(t *testing.T) {
	wrap := func(body string) []byte {
		return []byte(`<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict>` + body + `</dict></plist>`)
	}
	for _, tc := range []struct {
		name  string
		body  string
		ok    bool
		field string
		w, j  float64
	}{
		{"processor energy", `<key>elapsed_ns</key><integer>1000000000</integer><key>processor</key><dict><key>gpu_energy</key><integer>856</integer></dict>`, true, "processor.gpu_energy", 0.856, 0.856},
		{"processor power", `<key>elapsed_ns</key><integer>250000000</integer><key>processor</key><dict><key>gpu_power</key><real>1200.5</real></dict>`, true, "processor.gpu_power", 1.2005, 1.2005 * 0.25},
		{"energy without elapsed uses power", `<key>gpu</key><dict><key>gpu_energy</key><integer>5</integer></dict><key>processor</key><dict><key>gpu_power</key><integer>40</integer></dict>`, true, "processor.gpu_power", 0.04, 0},
		{"no gpu", `<key>elapsed_ns</key><integer>1</integer><key>processor</key><dict><key>cpu_power</key><real>3</real></dict>`, false, "", 0, 0},
	} {
		s, ok, err := ParsePlistDocument(wrap(tc.body))
		if err != nil || ok != tc.ok || s.Field != tc.field || !near(s.PowerW, tc.w) || !near(s.EnergyJ, tc.j) {
			t.Errorf("%s: %+v ok=%v err=%v", tc.name, s, ok, err)
		}
	}
	for _, bad := range []string{
		`<key>elapsed_ns</key><integer>x</integer>`,
		`<key>a</key>`,
		`<string>no key</string>`,
		`<key>a</key><widget/>`,
	} {
		if _, _, err := ParsePlistDocument(wrap(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if err := Parse(strings.NewReader(""), "json", nil); err == nil {
		t.Error("unknown format accepted")
	}
}

// A stream cut mid-document (powermetrics stopped) keeps the complete ones.
func TestParsePlistTruncated(t *testing.T) {
	b, err := os.ReadFile("testdata/gpu_power.plist")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = Parse(strings.NewReader(string(b[:len(b)-200])), FormatPlist, func(Sample) error { n++; return nil })
	if err != nil || n != 2 {
		t.Errorf("%d samples, err %v; want 2", n, err)
	}
}

type stepClock struct {
	mu sync.Mutex
	t  float64
}

func (c *stepClock) Now() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t++
	return c.t
}

// The source runs a command whose output is the fixture: readings carry
// the arrival times and the cumulative energy; once the process has ended,
// Read fails with the reason.
func TestSourceFromCommand(t *testing.T) {
	for _, format := range []string{FormatPlist, FormatText} {
		file := "testdata/gpu_power." + map[string]string{FormatPlist: "plist", FormatText: "txt"}[format]
		clk := &stepClock{}
		src, err := Open(Options{Format: format, Clock: clk.Now, Command: []string{"cat", file}})
		if err != nil {
			t.Fatal(err)
		}
		devs, _ := src.Devices(context.Background())
		if len(devs) != 1 || devs[0].ID != DeviceID || devs[0].Method != "counter" || !strings.HasPrefix(devs[0].PowerField, "powermetrics:") {
			t.Errorf("%s: devices = %+v", format, devs)
		}
		var rs []telemetry.Reading
		deadline := time.Now().Add(5 * time.Second)
		var readErr error
		for readErr == nil && time.Now().Before(deadline) {
			var got []telemetry.Reading
			got, readErr = src.Read(context.Background())
			rs = append(rs, got...)
			time.Sleep(5 * time.Millisecond)
		}
		if readErr == nil || !strings.Contains(readErr.Error(), "powermetrics ended") {
			t.Errorf("%s: read after the end: %v", format, readErr)
		}
		if len(rs) != 3 {
			t.Fatalf("%s: %d readings, want 3", format, len(rs))
		}
		// Cumulative counter: plist 10.670, 21.723, 23.286 J.
		wantCum := []float64{10.670, 21.723, 23.286}
		if format == FormatText {
			wantCum = []float64{10.7192954, 10.7192954 + 11.07173135, 10.7192954 + 11.07173135 + 1.5631824}
		}
		for i, r := range rs {
			if !r.HasEnergy || !near(r.EnergyJ, wantCum[i]) || r.MemUsedBytes != -1 || (i > 0 && r.T <= rs[i-1].T) {
				t.Errorf("%s: reading %d = %+v, want cumulative %v J", format, i, r, wantCum[i])
			}
		}
		th, why := src.Throttled()
		wantWhy := map[string]string{FormatPlist: "gpu0: thermal_pressure_heavy (1 reading)", FormatText: "gpu0: thermal_pressure_moderate (1 reading)"}[format]
		if !th || why != wantWhy {
			t.Errorf("%s: Throttled = %v %q, want %q", format, th, why, wantWhy)
		}
		if err := src.Close(); err != nil {
			t.Error(err)
		}
		if _, err := src.Read(context.Background()); !errors.Is(err, telemetry.ErrStopped) {
			t.Errorf("read after close: %v", err)
		}
	}
}

// sudo -n refusing (a password is required) is a clear error saying what
// to do.
func TestSudoNeedsPassword(t *testing.T) {
	_, err := Open(Options{Command: []string{"sh", "-c", "echo 'sudo: a password is required' >&2; exit 1"}})
	if err == nil || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"sudo -v", "NOPASSWD: /usr/bin/powermetrics", "--telemetry none", "a password is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	_, err = Open(Options{Command: []string{"sh", "-c", "echo 'powermetrics must be invoked as the superuser' >&2; exit 1"}})
	if err == nil || !strings.Contains(err.Error(), "must run as root") {
		t.Errorf("not root: %v", err)
	}
	_, err = Open(Options{Command: []string{"sh", "-c", "exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "ended before its first GPU sample") {
		t.Errorf("exit 3: %v", err)
	}
}

// A powermetrics that prints nothing times out; Close stops a live one
// promptly.
func TestStartTimeoutAndClose(t *testing.T) {
	start := time.Now()
	_, err := Open(Options{Command: []string{"sleep", "30"}, StartTimeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no GPU sample within") {
		t.Errorf("err = %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("timeout took %v", time.Since(start))
	}
	src, err := Open(Options{Format: FormatText, Command: []string{"sh", "-c", "cat testdata/gpu_power.txt; exec sleep 30"}})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("close took %v", time.Since(start))
	}
}

func TestNotMacOS(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("macOS")
	}
	_, err := Open(Options{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "only on macOS") {
		t.Errorf("err = %v", err)
	}
}

func TestDefaultCommand(t *testing.T) {
	got := strings.Join(DefaultCommand(250, FormatPlist), " ")
	want := "powermetrics --samplers gpu_power,thermal -i 250 -f plist"
	if os.Geteuid() != 0 {
		want = "sudo -n " + want
	}
	if got != want {
		t.Errorf("command = %q, want %q", got, want)
	}
	if got := DefaultCommand(0, FormatText); got[len(got)-1] != "500" {
		t.Errorf("text command = %v", got)
	}
}
