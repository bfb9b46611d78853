package redfish

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
)

// Name is the source's name (--telemetry redfish).
const Name = "redfish"

// The source's flags, and the password's key (JOULEBENCH_REDFISH_PASSWORD
// in the environment, never a flag).
const (
	flagURL      = "redfish-url"
	flagUser     = "redfish-user"
	flagChassis  = "redfish-chassis"
	flagSession  = "redfish-session"
	flagInsecure = "redfish-insecure"
	keyPassword  = "redfish-password"
)

// Descriptor is the Redfish source: whole-node power from the BMC.
func Descriptor() telemetry.Descriptor {
	return telemetry.Descriptor{
		Name: Name,
		Flags: func(f *pflag.FlagSet) {
			f.String(flagURL, "", "BMC Redfish service of --telemetry redfish, e.g. https://bmc1 (node power; the password in JOULEBENCH_REDFISH_PASSWORD, never on the command line)")
			f.String(flagUser, "", "Redfish user name (--telemetry redfish)")
			f.StringArray(flagChassis, nil, "Redfish chassis ID to read (repeatable; default: the first chassis with a power reading)")
			f.Bool(flagSession, false, "authenticate with a Redfish session (X-Auth-Token) instead of basic auth")
			f.Bool(flagInsecure, false, "do not verify the BMC's TLS certificate (--telemetry redfish)")
		},
		Check: check,
		Open:  open,
	}
}

func optionsOf(v telemetry.Values) Options {
	return Options{
		URL:      strings.TrimSpace(v.GetString(flagURL)),
		Username: v.GetString(flagUser),
		Password: v.GetString(keyPassword),
		Chassis:  v.GetStringSlice(flagChassis),
		Session:  v.GetBool(flagSession),
		Insecure: v.GetBool(flagInsecure),
	}
}

// check refuses a Redfish flag without the source, the source without its
// URL, and a session without a user.
func check(v telemetry.Values, sel telemetry.Selection) error {
	r := optionsOf(v)
	if (r.URL != "" || r.Username != "" || len(r.Chassis) > 0 || r.Session || r.Insecure) && !sel.Has(Name) {
		return fmt.Errorf("--redfish-* flags are for --telemetry redfish, not %s", sel)
	}
	if sel.Has(Name) && r.URL == "" {
		return fmt.Errorf("--telemetry redfish needs --redfish-url https://BMC (and usually --redfish-user, the password in JOULEBENCH_REDFISH_PASSWORD)")
	}
	if r.Session && r.Username == "" {
		return fmt.Errorf("--redfish-session needs --redfish-user")
	}
	return nil
}

func open(ctx context.Context, v telemetry.Values, env telemetry.Env) (telemetry.Source, record.TelemetryInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 4*DefaultTimeout)
	defer cancel()
	ro := optionsOf(v)
	ro.Logf = env.Logf
	src, err := Open(ctx, ro)
	if err != nil {
		return nil, record.TelemetryInfo{}, err
	}
	devs, _ := src.Devices(ctx)
	field := ""
	if len(devs) > 0 {
		field = devs[0].PowerField
	}
	auth := "no authentication"
	switch {
	case ro.Username != "" && ro.Session:
		auth = "a Redfish session"
	case ro.Username != "":
		auth = "basic authentication"
	}
	return telemetry.NewTolerant(src, telemetry.NodeReadFailures, env.Clock), record.TelemetryInfo{Source: Name, Note: fmt.Sprintf("Redfish %s (%s, %s): whole-node power (domain node) from %s; %s; %s",
		ro.URL, auth, transportNote(ro.URL, ro.Insecure), field, telemetry.DeviceSummary(devs), telemetry.TolerantNote())}, nil
}

// transportNote says how the connection to the BMC at rawURL is secured:
// TLS verified or not (--redfish-insecure), or, over plain http, not at
// all (there is no TLS to verify).
func transportNote(rawURL string, insecure bool) string {
	switch {
	case plainHTTP(rawURL):
		return "plain http, NOT encrypted: no TLS"
	case insecure:
		return "TLS NOT verified (--redfish-insecure)"
	}
	return "TLS verified"
}
