package workflow

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/joulebench/joulebench/internal/yamlstrict"
)

// Duration is a time span in a profile: a Go duration string ("20s",
// "500ms") or a number of seconds.
type Duration time.Duration

// UnmarshalYAML accepts "1m30s" or a plain number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a duration such as \"20s\", got a %s", yamlstrict.KindName(n))
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Seconds returns the duration in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

func parseDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err == nil {
		if v < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return v, nil
	}
	if durationRE.MatchString(strings.TrimSpace(s)) {
		// Well formed, yet time.ParseDuration refused it: too long.
		return 0, fmt.Errorf("duration %q overflows (the longest is %s)", s, time.Duration(math.MaxInt64))
	}
	if isNumber(s) {
		secs, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || secs > maxDurationS {
			return 0, fmt.Errorf("duration %q overflows (the longest is %s)", s, time.Duration(math.MaxInt64))
		}
		if secs < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	return 0, fmt.Errorf("invalid duration %q (use e.g. \"20s\", \"500ms\" or a number of seconds)", s)
}

// maxDurationS is the longest duration in seconds that converts to a
// time.Duration (int64 nanoseconds) without overflow; 2^63 ns rounds to a
// float64 just above MaxInt64, so the bound is the float64 below it.
var maxDurationS = math.Nextafter(float64(math.MaxInt64), 0) / float64(time.Second)

// durationRE is the syntax time.ParseDuration accepts.
var durationRE = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

var numberRE = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)

func isNumber(s string) bool { return numberRE.MatchString(strings.TrimSpace(s)) }

// decoder is the strict YAML decoder plus what profile loading adds: the
// resolved parameter values for ${} interpolation.
type decoder struct {
	*yamlstrict.Decoder
	rawParams map[string]any
	flat      *flattening // set when the profile extends another (extends.go)
}

func newDecoder(file string) *decoder { return &decoder{Decoder: yamlstrict.New(file)} }
