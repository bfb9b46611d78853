//go:build !cgo

package nvml

import (
	"errors"
	"strings"
	"testing"
)

// Without cgo, Open says so and how to get on.
func TestOpenWithoutCgo(t *testing.T) {
	src, err := Open(Options{})
	if src != nil || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Open = %v, %v; want ErrUnavailable", src, err)
	}
	for _, want := range []string{"built without cgo: NVML unavailable", "--telemetry none", "--telemetry dcgm"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
