// Package profiles embeds the built-in methodology profiles. They are plain
// YAML with the same schema as a user's profile file; there is no Go logic
// here beyond listing and reading them.
package profiles

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Names lists the built-in profiles.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// Read returns the YAML of a built-in profile.
func Read(name string) ([]byte, error) {
	b, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no built-in profile %q (built-in: %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}
