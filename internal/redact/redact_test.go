package redact

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// Every encoding in which joulebench sends a secret is hidden once the
// Redactor knows the secret (item: a server that echoes the request).
func TestRedactorHidesEveryEncoding(t *testing.T) {
	const pw, q, key = `p@ss w/"rd&`, "qUeRy+S3cret/=", "sk-bearer-KEY"
	r := New().WithURL("http://alice:" + url.PathEscape(pw) + "@127.0.0.1:8000/v1?api_key=" + url.QueryEscape(q)).With(key)
	basic := base64.StdEncoding.EncodeToString([]byte("alice:" + pw))
	jsonOf := func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }
	cases := []struct{ name, text, secret string }{
		{"raw password", "denied for " + pw + " today", pw},
		{"query-escaped password", "u=" + url.QueryEscape(pw), url.QueryEscape(pw)},
		{"path-escaped password", "at /" + url.PathEscape(pw) + "/", url.PathEscape(pw)},
		{"json-escaped password", `{"echo":"` + jsonOf(pw) + `"}`, jsonOf(pw)},
		{"html-json-escaped password", `{"echo":"p@ss w/\"rd\u0026"}`, `p@ss w/\"rd\u0026`},
		{"base64 user:password", "got Basic " + basic + " from you", basic},
		{"base64 in a query", "x " + url.QueryEscape(basic), url.QueryEscape(basic)},
		{"raw query value", "value " + q + ".", q},
		{"query-escaped query value", "GET /v1/models?api_key=" + url.QueryEscape(q) + " 401", url.QueryEscape(q)},
		{"json-escaped query value", `"q":"` + jsonOf(q) + `"`, jsonOf(q)},
		{"bearer key raw", "key " + key, key},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := r.String(c.text)
			if strings.Contains(got, c.secret) {
				t.Errorf("String(%q) = %q: still shows %q", c.text, got, c.secret)
			}
			if !strings.Contains(got, Mark) {
				t.Errorf("String(%q) = %q: no %s mark", c.text, got, Mark)
			}
		})
	}
}

// The patterns hide secrets the Redactor was never told, as a hostile
// server echoes them: URL user info and query values, Authorization
// headers, NAME=VALUE and "NAME": "VALUE" of secret names. Short secrets
// (below MinLiteral) are only found this way.
func TestRedactPatterns(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"url user info and query", `Get "http://u:pw@127.0.0.1:9/v1/models?api_key=q": refused`, `Get "http://u:[redacted]@127.0.0.1:9/v1/models?api_key=[redacted]": refused`},
		{"url token user", "https://tok@host/x", "https://[redacted]@host/x"},
		{"basic header", "Authorization: Basic dTpwdw==\n", "Authorization: Basic [redacted]\n"},
		{"bearer header json", `{"authorization":"Bearer k"}`, `{"authorization":"[redacted]"}`},
		{"query pair", "GET /v1/chat/completions?api_key=q&n=1 500", "GET /v1/chat/completions?api_key=[redacted]&n=1 500"},
		{"env pair", "DB_PASS=hunter2 MYSQL_PWD=x N=3", "DB_PASS=[redacted] MYSQL_PWD=[redacted] N=3"},
		{"json member", `{"api_key": "k", "max_tokens": 8, "model": "m"}`, `{"api_key": "[redacted]", "max_tokens": 8, "model": "m"}`},
		{"tokens are counts", "max_tokens=8 tokenizer=x", "max_tokens=8 tokenizer=x"},
		{"per-token metrics are not secrets", `{"steady_j_per_token": 0.25, "token_times": [1, 2]}`, `{"steady_j_per_token": 0.25, "token_times": [1, 2]}`},
		{"messages that explain a syntax", `--engine-env "X": want KEY=VALUE; --set "w": expected key=value`, `--engine-env "X": want KEY=VALUE; --set "w": expected key=value`},
		{"plain text", "http 500: internal error", "http 500: internal error"},
		{"url without secrets", "http://127.0.0.1:9/v1/models", "http://127.0.0.1:9/v1/models"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := (*Redactor)(nil).String(c.text); got != c.want {
				t.Errorf("String(%q)\n got %q\nwant %q", c.text, got, c.want)
			}
		})
	}
}

// Names that look secret (item: --engine-env and --extra-body archived).
func TestIsSecretName(t *testing.T) {
	cases := []struct {
		name string
		want bool
	}{
		{"OPENAI_KEY", true}, {"OPENAI_API_KEY", true}, {"DB_PASS", true}, {"MYSQL_PWD", true},
		{"PGPASSWORD", true}, {"db_passwd", true}, {"HF_TOKEN", true}, {"--hf-token", true},
		{"aws_secret_access_key", true}, {"GOOGLE_APPLICATION_CREDENTIALS", true}, {"api_key", true},
		{"apikey", true}, {"--api-key", true}, {"Authorization", true}, {"ssh.passphrase", true},
		{"max_tokens", false}, {"tokenizer", false}, {"bos_token_id", false}, {"CUDA_VISIBLE_DEVICES", false},
		{"model", false}, {"think", false}, {"MY_SESSION", false}, {"", false}, {"monkey", false},
		{"--secret-name", false}, {"token_counts", false},
		{"access_token", true}, {"GITHUBTOKEN", true}, {"token", true}, {"X-Auth-Token", true}, {"refresh_token", true},
		// measurements whose names hold "token" (compare's and analyze's JSON)
		{"steady_j_per_token", false}, {"full_j_per_token", false}, {"j_per_token_first_turns", false},
		{"j_per_answer_token", false}, {"token_times", false}, {"first_token_at", false}, {"j_per_good_token", false},
	}
	for _, c := range cases {
		if got := IsSecretName(c.name); got != c.want {
			t.Errorf("IsSecretName(%q) = %v, want %v", c.name, got, c.want)
		}
	}
	if r := New("session"); !r.IsSecretName("MY_SESSION") || r.IsSecretName("model") {
		t.Errorf("New(session): MY_SESSION should be secret, model not")
	}
}

// A query value is hidden as the URL wrote it, whatever its escaping.
func TestQueryValueAsWritten(t *testing.T) {
	r := New().WithURL("http://h/v1?k=a%7Eb%2Dsecret")
	for _, text := range []string{"got a%7Eb%2Dsecret", "got a~b-secret"} {
		if got := r.String(text); got != "got "+Mark {
			t.Errorf("String(%q) = %q", text, got)
		}
	}
}

func TestRedactorFromInputs(t *testing.T) {
	r := New("session").
		WithArgv([]string{"--api-key", "sk-argv-1", "--hf-token=hf_argv_2", "--engine-url", "http://u:pwArgv3@h/v1?k=qArgv4",
			"--engine-env", "DB_PASS=envArgv9", "--engine-env=MYSQL_PWD=envArgv10", "--engine-env", "CUDA_VISIBLE_DEVICES=0,1"}).
		WithEnv(map[string]string{"OPENAI_KEY": "envKey5", "MY_SESSION": "sessVal6", "CUDA_VISIBLE_DEVICES": "0,1"}).
		WithValue(map[string]any{"api_key": "bodyKey7", "nested": []any{map[string]any{"password": "bodyPw8"}}, "think": false})
	secrets := []string{"sk-argv-1", "hf_argv_2", "pwArgv3", "qArgv4", "envKey5", "sessVal6", "bodyKey7", "bodyPw8", "envArgv9", "envArgv10"}
	text := strings.Join(secrets, " | ") + " | 0,1"
	got := r.String(text)
	for _, s := range secrets {
		if strings.Contains(got, s) {
			t.Errorf("%q still shows %q", got, s)
		}
	}
	if !strings.HasSuffix(got, "| 0,1") {
		t.Errorf("a value that is no secret was hidden: %q", got)
	}
	env := r.Env(map[string]string{"MY_SESSION": "s", "OPENAI_KEY": "k", "N": "1"})
	if env["MY_SESSION"] != Mark || env["OPENAI_KEY"] != Mark || env["N"] != "1" {
		t.Errorf("Env = %v", env)
	}
}

// A secret shorter than MinLiteral is not replaced in free text (it would
// hide ordinary words), only where a pattern finds it.
func TestShortSecretsStayInFreeText(t *testing.T) {
	r := New().With("pw")
	if got := r.String("pwd is a command"); got != "pwd is a command" {
		t.Errorf("short secret replaced in free text: %q", got)
	}
}

func FuzzRedactorString(f *testing.F) {
	f.Add("s3cr3t-value", "prefix %s suffix")
	f.Add("a b&c=d", `{"x":"%s"}`)
	f.Add("ünïcode-ключ", "?k=%s")
	f.Fuzz(func(t *testing.T, secret, tmpl string) {
		before, after, ok := strings.Cut(tmpl, "%s")
		if len(secret) < MinLiteral || !ok || strings.ContainsAny(secret, "[]") {
			return
		}
		r := New().With(secret)
		for _, enc := range Encodings(secret) {
			if strings.Contains(before, enc) || strings.Contains(after, enc) {
				continue
			}
			text := before + enc + after
			if got := r.String(text); strings.Contains(got, enc) {
				t.Errorf("String(%q) = %q shows %q", text, got, enc)
			}
		}
	})
}
