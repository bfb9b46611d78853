package redact

import (
	"errors"
	"strings"
	"testing"
)

// FromInputs hides every kind of input a process gets: the command line,
// values, URLs' credentials, the environment's secrets, engine variables
// and arguments and --extra-body's secret members.
func TestFromInputs(t *testing.T) {
	env := map[string]string{"HF_TOKEN": "hf_envToken1", "HF_ENDPOINT": "https://u:endpointPw2@hub.example", "PATH": "/usr/bin",
		"JOULEBENCH_AGENT_TOKEN": "agentTok10"}
	r := FromInputs(Inputs{
		Names:      []string{"session"},
		Argv:       []string{"run", "--api-key", "sk-argv-3"},
		Values:     []string{"apiValue4", ""},
		URLs:       []string{"http://user:urlPw5@h/v1", ""},
		Getenv:     func(k string) string { return env[k] },
		EngineEnv:  []string{"MY_SESSION=sessVal6", "CUDA_VISIBLE_DEVICES=0,1"},
		EngineArgs: []string{"--token", "argTok7"},
		ExtraBody:  `{"api_key": "bodyKey8", "think": false}`,
	})
	secrets := []string{"hf_envToken1", "endpointPw2", "sk-argv-3", "apiValue4", "urlPw5", "sessVal6", "argTok7", "bodyKey8", "agentTok10"}
	got := r.String(strings.Join(secrets, " | ") + " | /usr/bin 0,1")
	for _, s := range secrets {
		if strings.Contains(got, s) {
			t.Errorf("%q still shows %q", got, s)
		}
	}
	if !strings.HasSuffix(got, "| /usr/bin 0,1") {
		t.Errorf("a value that is no secret was hidden: %q", got)
	}
	// Without Getenv, the environment is not read; a body that is no JSON
	// is ignored.
	r = FromInputs(Inputs{ExtraBody: "{not json", Getenv: nil})
	if got := r.String("hf_envToken1"); got != "hf_envToken1" {
		t.Errorf("environment read without Getenv: %q", got)
	}
}

type coded struct{ error }

func TestError(t *testing.T) {
	r := New().With("secretValue9")
	base := coded{errors.New("engine said secretValue9")}
	err := r.Error(base)
	if strings.Contains(err.Error(), "secretValue9") {
		t.Errorf("Error = %q", err)
	}
	var c coded
	if !errors.As(err, &c) || !errors.Is(err, base) {
		t.Error("the redacted error hides the error itself")
	}
	plain := errors.New("nothing to hide")
	if r.Error(plain) != plain || r.Error(nil) != nil {
		t.Error("an error without secrets must stay as it is")
	}
}
