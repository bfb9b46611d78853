package workflow

import (
	"strings"

	"github.com/joulebench/joulebench/internal/exitcode"
)

// ParseSets turns --set values (key=value) into Options.Overrides; a value
// without a key is invalid input (exitcode.Invalid).
func ParseSets(values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range values {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, exitcode.Invalidf("--set %q: expected key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}
