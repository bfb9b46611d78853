package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/metricdefs"
	"github.com/joulebench/joulebench/profiles"
	"github.com/joulebench/joulebench/steps"
	"github.com/joulebench/joulebench/workflow"
)

func (a *app) profilesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List and show the built-in profiles, step kinds and formula built-ins",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the built-in profiles",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			for _, n := range profiles.Names() {
				src, _ := profiles.Read(n)
				l, err := workflow.Load(src, n, workflow.Options{Registry: steps.Registry()})
				if err != nil {
					return fmt.Errorf("built-in profile %s is invalid: %w", n, err)
				}
				fmt.Fprintf(a.out, "%-14s %s\n", n, oneLine(l.Profile.Description))
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show NAME|FILE",
		Short: "Print a profile's YAML (the method as data)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			src, _, err := workflow.ReadProfile(args[0])
			if err != nil {
				return withCode(exitInvalid, err)
			}
			_, err = a.out.Write(src)
			return err
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "builtins",
		Short: "List the step kinds and the functions formulas can call",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			reg := steps.Registry()
			fmt.Fprintln(a.out, "Step kinds:")
			for _, n := range reg.Names() {
				k, _ := reg.Lookup(n)
				fmt.Fprintf(a.out, "  %-14s %s\n", n, k.Doc)
			}
			fmt.Fprintln(a.out, "\nFunctions (besides expr's own: filter, map, sum, len, ...):")
			for _, b := range metricdefs.Builtins() {
				fmt.Fprintf(a.out, "  %s\n      %s\n", b.Signature, b.Doc)
			}
			fmt.Fprintln(a.out, "\nData: run, stages.NAME.{start,end,duration}, events.NAME, requests[], devices[], parameters and derived values by name.")
			return nil
		},
	})
	return cmd
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
