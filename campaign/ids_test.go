package campaign

import "testing"

// idsCampaign has every axis and args at each level (a secret among
// them), so that its ids cover every part of the hashed configuration.
const idsCampaign = `name: ids
profile: benchmark-1.5
out: out
repetitions: 2
args: [--seed, "7"]
matrix:
  engine: [{kind: sim, args: [--sim-preset, small-batch]}, {kind: vllm, args: [--api-key=k3y]}]
  model: [{id: org/m, params: 8e9, tp: 2}]
  scenario: [{name: chat, dataset: chat}]
  load: [{name: c4, set: {mode: concurrency, concurrency: "4"}}]
  set:
    warmup_requests: ["4", "8"]
`

// The run ids of idsCampaign as the plan computed them before the runs
// took a typed spec: the ids hash Config{Profile, Args, Rep}, and must
// not change while archives of the same campaign exist.
var idsWant = []string{
	"sim-m-chat-c4-4-r1-6a8470a9", "sim-m-chat-c4-4-r2-45ec94b2", "sim-m-chat-c4-8-r1-4851da41", "sim-m-chat-c4-8-r2-940f456d",
	"vllm-m-chat-c4-4-r1-6af99487", "vllm-m-chat-c4-4-r2-7ca191d0", "vllm-m-chat-c4-8-r1-f1217cb5", "vllm-m-chat-c4-8-r2-17b1a618",
}

func TestRunIDsUnchanged(t *testing.T) {
	p := load(t, idsCampaign).Expand()
	if len(p.Runs) != len(idsWant) {
		t.Fatalf("%d runs, want %d", len(p.Runs), len(idsWant))
	}
	for i, r := range p.Runs {
		if r.ID != idsWant[i] {
			t.Errorf("run %d: id %s, want %s", i, r.ID, idsWant[i])
		}
	}
}
