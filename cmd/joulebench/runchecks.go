package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/workload"
)

// checkRunInputs checks the flags of a run that name something outside
// the profile (a URL, a port, a file, a format, a JSON body), so that a
// mistake is invalid input reported before any run directory is created,
// never a run that fails (or silently does something else) later.
func (a *app) checkRunInputs(changed func(string) bool) error {
	if _, err := a.resultsView(); err != nil {
		return err
	}
	if err := checkEngineURL(a.v.GetString("engine-url"), changed("engine-url")); err != nil {
		return err
	}
	if p := a.v.GetInt("port"); p < 0 || p > 65535 {
		return invalidf("--port %d: a TCP port is 1 to 65535 (0: a free one)", p)
	}
	if f := a.v.GetString("dataset-format"); f != "" && !slices.Contains(workload.Formats, f) {
		return invalidf("--dataset-format %q: valid formats are %s", f, strings.Join(workload.Formats, ", "))
	}
	if _, err := a.extraBody(); err != nil {
		return err
	}
	if p := strings.TrimSpace(a.v.GetString("replay")); p != "" {
		if err := checkReplayPath(p); err != nil {
			return err
		}
	}
	if base := a.v.GetString("baseline"); base != "" {
		if _, err := archive.Load(base); err != nil {
			return withCode(exitInvalid, fmt.Errorf("--baseline: %w", err))
		}
	}
	return nil
}

// checkEngineURL refuses an --engine-url given empty (it used to run the
// simulator instead) and one that is not an http(s) URL with a host and,
// when given, a port in 1..65535.
func checkEngineURL(raw string, given bool) error {
	if raw == "" {
		if given {
			return invalidf("--engine-url is empty: give the server's URL, e.g. http://127.0.0.1:8000 (or leave the flag out to run the simulator)")
		}
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return invalidf("--engine-url: not a URL: %v", redactURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return invalidf("--engine-url: scheme %q: want http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		return invalidf("--engine-url: no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return invalidf("--engine-url: port %s: a TCP port is 1 to 65535", p)
		}
	} else if _, _, err := net.SplitHostPort(u.Host); err == nil {
		return invalidf("--engine-url: empty port")
	}
	return nil
}

// redactURLError keeps a URL parse error from repeating the URL (it may
// hold a password or a key).
func redactURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// checkReplayPath checks that --replay names a power.csv or a run
// directory holding one.
func checkReplayPath(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return invalidf("--replay %s: %v", p, err)
	}
	if st.IsDir() {
		csv := filepath.Join(p, archive.PowerFile)
		if _, err := os.Stat(csv); err != nil {
			return invalidf("--replay %s: a run directory without %s", p, archive.PowerFile)
		}
	}
	return nil
}
