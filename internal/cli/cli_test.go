package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/joulebench/joulebench/internal/exitcode"
)

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("format: json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.yaml")
	if err := os.WriteFile(other, []byte("format: csv\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("format: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		args   []string
		env    string // JBTEST_FORMAT
		dir    string
		format string // --format's value read
		errMsg string
	}{
		{name: "nothing", format: "table"},
		{name: "the default directory's file", dir: dir, format: "json"},
		{name: "no file in the default directory", dir: t.TempDir(), format: "table"},
		{name: "--config wins over the directory", args: []string{"--config", other}, dir: dir, format: "csv"},
		{name: "a flag wins over the file", args: []string{"--config", other, "--format", "markdown"}, format: "markdown"},
		{name: "the environment wins over the file", args: []string{"--config", other}, env: "json", format: "json"},
		{name: "--config missing", args: []string{"--config", filepath.Join(dir, "nope.yaml")}, errMsg: "config file " + filepath.Join(dir, "nope.yaml")},
		{name: "--config unreadable", args: []string{"--config", bad}, errMsg: "config file " + bad},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("JBTEST_FORMAT", c.env)
			}
			fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
			fs.String("config", "", "")
			fs.String("format", "table", "")
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			v := viper.New()
			if err := v.BindPFlags(fs); err != nil {
				t.Fatal(err)
			}
			err := ReadConfig(v, "JBTEST", "config", c.dir)
			if c.errMsg != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.errMsg) || exitcode.Of(err) != int(exitcode.Invalid) {
					t.Fatalf("err %v, want invalid input starting %q", err, c.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := v.GetString("format"); got != c.format {
				t.Errorf("format %q, want %q", got, c.format)
			}
		})
	}
}

func TestLogger(t *testing.T) {
	for _, c := range []struct {
		level, format string
		want          string // in what a warning writes; "": nothing written
		errMsg        string
	}{
		{"info", "console", "WRN careful component=x", ""},
		{"info", "json", `"level":"warn","component":"x"`, ""},
		{"error", "console", "", ""},
		{"loud", "console", "", "--log-level: "},
		{"info", "xml", "", "--log-format must be console or json"},
	} {
		var buf bytes.Buffer
		log, err := Logger(&buf, c.level, c.format)
		if c.errMsg != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.errMsg) || exitcode.Of(err) != int(exitcode.Invalid) {
				t.Errorf("%s/%s: err %v, want invalid input starting %q", c.level, c.format, err, c.errMsg)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		log.Warn().Str("component", "x").Msg("careful")
		if got := buf.String(); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s/%s: wrote %q, want %q", c.level, c.format, got, c.want)
		}
	}
}

func TestIsUsageError(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want bool
	}{
		{`unknown command "rnu" for "joulebench"`, true},
		{"accepts 1 arg(s), received 0", true},
		{"unknown flag: --nope", true},
		{`invalid argument "x" for "--port" flag: strconv.ParseInt: parsing "x": invalid syntax`, true},
		{"config file: no such file", false},
		{"run: engine exited", false},
	} {
		if got := IsUsageError(errors.New(c.msg)); got != c.want {
			t.Errorf("IsUsageError(%q) = %v, want %v", c.msg, got, c.want)
		}
	}
}
