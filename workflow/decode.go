package workflow

import (
	"fmt"
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
	if v, err := time.ParseDuration(s); err == nil {
		if v < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return v, nil
	}
	if isNumber(s) {
		secs, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err == nil && secs >= 0 {
			return time.Duration(secs * float64(time.Second)), nil
		}
		return 0, fmt.Errorf("duration %q is negative or out of range", s)
	}
	return 0, fmt.Errorf("invalid duration %q (use e.g. \"20s\", \"500ms\" or a number of seconds)", s)
}

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
