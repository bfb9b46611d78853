package process

import "testing"

// A server is found by its command name, its program's base name, or the
// Python module it runs; the command name may be cut at 15 bytes (Linux).
func TestMatchName(t *testing.T) {
	names := []string{"vllm", "sglang", "llama-server", "ollama", "mlx_lm.server", "LM Studio", "a-very-long-server-name"}
	cases := []struct {
		name string
		p    ProcInfo
		want string // "" = no match
	}{
		{"command name", ProcInfo{Name: "llama-server"}, "llama-server"},
		{"argv[0] base", ProcInfo{Name: "python3", Args: []string{"/opt/venv/bin/vllm", "serve", "m"}}, "vllm"},
		{"python -m package", ProcInfo{Name: "python3", Args: []string{"python3", "-m", "sglang.launch_server", "--model", "m"}}, "sglang"},
		{"python -m module", ProcInfo{Name: "python3", Args: []string{"python", "-m", "mlx_lm.server"}}, "mlx_lm.server"},
		{"name with a space", ProcInfo{Name: "LM Studio"}, "LM Studio"},
		{"case", ProcInfo{Name: "Ollama"}, "ollama"},
		{"cut command name", ProcInfo{Name: "a-very-long-ser"}, "a-very-long-server-name"},
		{"an argument is not a name", ProcInfo{Name: "bash", Args: []string{"bash", "-c", "vllm serve"}}, ""},
		{"other program", ProcInfo{Name: "sleep", Args: []string{"sleep", "60"}}, ""},
	}
	for _, tc := range cases {
		got, ok := tc.p.MatchName(names)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: MatchName = %q %v, want %q", tc.name, got, ok, tc.want)
		}
	}
}
