package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/joulebench/joulebench/analysis"
	"github.com/joulebench/joulebench/profiles"
)

// finder finds profiles by name: the built-ins, the user's profile
// directory ($XDG_CONFIG_HOME/joulebench/profiles) and --profile-path
// (also `profile-path:` in the config file).
func (a *app) finder() *profiles.Finder {
	return profiles.NewFinder(a.v.GetStringSlice("profile-path"))
}

func (a *app) profilesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List, show and start profiles; list step kinds and formula built-ins",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the profiles found by name, and where each comes from",
		Long:  profiles.ListHelp,
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return a.profiles().List(a.out) },
	})
	show := &cobra.Command{
		Use:   "show NAME|FILE",
		Short: "Print a profile's YAML (the method as data); --resolved: flattened, with where each entry came from",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			resolved, _ := cmd.Flags().GetBool("resolved")
			src, err := a.profiles().Show(args[0], resolved)
			if err != nil {
				return err
			}
			_, err = a.out.Write(src)
			return err
		},
	}
	show.Flags().Bool("resolved", false, "print the flattened profile (extends resolved), each entry with the file and line it came from")
	cmd.AddCommand(show)
	newCmd := &cobra.Command{
		Use:   "new NAME --extends PROFILE",
		Short: "Write a commented starting profile NAME.yaml in the user's profile directory",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			parent, _ := cmd.Flags().GetString("extends")
			dir, _ := cmd.Flags().GetString("dir")
			path, err := a.profiles().New(args[0], parent, dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.out, "wrote %s\nrun it with: joulebench run %s   (check it: joulebench validate %s)\n", path, args[0], args[0])
			return nil
		},
	}
	newCmd.Flags().String("extends", "benchmark-1.5", "the profile the new one extends")
	newCmd.Flags().String("dir", "", "directory to write to (default: $XDG_CONFIG_HOME/joulebench/profiles)")
	cmd.AddCommand(newCmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "builtins",
		Short: "List the step kinds and the functions formulas can call",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { analysis.WriteBuiltins(a.out); return nil },
	})
	return cmd
}
