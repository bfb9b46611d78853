// Package safename checks the names joulebench builds paths from (run ids,
// profile, campaign, engine and parameter names, sweep values) and joins
// them to their parent so that the result cannot leave it.
package safename

import (
	"fmt"
	"path/filepath"
	"strings"
)

// MaxLen is the longest name: a run id (timestamp, profile, engine and a
// counter) stays well below the 255 bytes a file name may have.
const MaxLen = 128

// Rule says in words what Check accepts, for error messages and docs.
const Rule = "1 to 128 of the letters A-Z a-z, digits, '.', '_', '+' and '-', not starting with '.' or '-'"

// Check returns an error when s is not a safe file name: 1 to MaxLen
// ASCII letters, digits, '.', '_', '+' and '-', not starting with '.' or
// '-' (so never "", ".", "..", a hidden file or something read as a
// flag). Slashes, backslashes, NUL, spaces, other control characters and
// non-ASCII letters are refused. what names the value in the error.
func Check(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s: empty; want %s", what, Rule)
	case len(s) > MaxLen:
		return fmt.Errorf("%s %.40q...: %d bytes, longer than %d", what, s, len(s), MaxLen)
	case s[0] == '.' || s[0] == '-':
		return fmt.Errorf("%s %q: starts with %q; want %s", what, s, s[0], Rule)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !allowed(c) {
			return fmt.Errorf("%s %q: character %q at byte %d is not allowed; want %s", what, s, c, i, Rule)
		}
	}
	return nil
}

func allowed(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' || c == '+'
}

// Join checks name and returns parent/name, after making sure that the
// cleaned result lies directly under parent.
func Join(what, parent, name string) (string, error) {
	if err := Check(what, name); err != nil {
		return "", err
	}
	p := filepath.Join(parent, name)
	if err := Within(parent, p); err != nil {
		return "", fmt.Errorf("%s %q: %w", what, name, err)
	}
	return p, nil
}

// Within returns an error unless path, cleaned and made absolute, lies
// inside parent (cleaned and made absolute the same way).
func Within(parent, path string) error {
	ap, err := filepath.Abs(parent)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", parent, err)
	}
	a, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", path, err)
	}
	rel, err := filepath.Rel(ap, a)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("%s resolves outside %s", path, parent)
	}
	return nil
}
