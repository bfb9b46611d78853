package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// pflag reads a `quoted` word of a flag's usage as its value's name, so
// that --help printed "--ollama-pull ollama pull" and "--quick quick:":
// no usage of any command holds a backtick.
func TestHelpHasNoBacktickValueNames(t *testing.T) {
	a := newApp(io.Discard, io.Discard)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				name, _ := pflag.UnquoteUsage(f)
				t.Errorf("%s --%s: usage has a backtick (value name %q): %s", c.CommandPath(), f.Name, name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.root)
}
