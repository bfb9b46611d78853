package measure

import (
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

func resReq(id string, sent, first, done float64, tokens int) *record.Request {
	return &record.Request{ID: id, Phase: "formal", OK: true, SentAt: sent, FirstTokenAt: first, DoneAt: done, OutputTokens: tokens}
}

// On flat100 (100 W, so a piece of length L holds 100·L J):
//
//	A resident [0, 4], 10 tokens; B resident [2, 6], 5 tokens; C [7, 8],
//	4 tokens, alone; D failed [1, 9]; E no tokens [1, 9].
//	[0, 2] A alone: 200 J to A. [2, 4] A and B: 200 J, 100 J each.
//	[4, 6] B alone: 200 J to B. [6, 7] nobody: unattributed. [7, 8] C: 100 J.
//	A: 300 J, 30 J/token; B: 300 J, 60 J/token; C: 100 J, 25 J/token.
//
// Attribute would start each at its first token: A's prefill [0, 1] and
// B's [2, 3] are in the residency and not in the generation interval.
func TestAttributeResidentHandWorked(t *testing.T) {
	pd := flat100(t)
	failed := resReq("D", 1, 2, 9, 7)
	failed.OK = false
	reqs := []*record.Request{
		resReq("A", 0, 1, 4, 10),
		resReq("B", 2, 3, 6, 5),
		resReq("C", 7, 7.5, 8, 4),
		failed,
		resReq("E", 1, 2, 9, 0),
	}
	got, err := pd.AttributeResident(reqs, "trapz")
	if err != nil {
		t.Fatal(err)
	}
	checkAttr(t, got, []Attribution{
		{ID: "A", EnergyJ: 300, Tokens: 10, JPerToken: 30},
		{ID: "B", EnergyJ: 300, Tokens: 5, JPerToken: 60},
		{ID: "C", EnergyJ: 100, Tokens: 4, JPerToken: 25},
		{ID: "D"},
		{ID: "E"},
	})
}

// A power step, and a sequential conversation: turn 1 prefills 2 s and
// generates 2 s; turn 2, its prefix cached, prefills 0.5 s and generates
// 2 s. Power: 300 W on [0, 4], 200 W after (samples 0, 4, 4.0001, 10: the
// trapezoid over [4, 4.0001] is 0.0001·250 = 0.025 J).
//
//	turn 1 [0, 4]: 4·300 = 1200 J, 10 tokens: 120 J/token.
//	turn 2 [5, 7.5]: 2.5·200 = 500 J, 10 tokens: 50 J/token.
//
// By generation interval turn 1 would get only [2, 4]: 600 J.
func TestAttributeResidentSequentialTurns(t *testing.T) {
	pd := mustPower(t, []record.PowerSample{ps("gpu0", 0, 300), ps("gpu0", 4, 300), ps("gpu0", 4.0001, 200), ps("gpu0", 10, 200)})
	reqs := []*record.Request{resReq("t1", 0, 2, 4, 10), resReq("t2", 5, 5.5, 7.5, 10)}
	got, err := pd.AttributeResident(reqs, "trapz")
	if err != nil {
		t.Fatal(err)
	}
	checkAttr(t, got, []Attribution{{ID: "t1", EnergyJ: 1200, Tokens: 10, JPerToken: 120}, {ID: "t2", EnergyJ: 500, Tokens: 10, JPerToken: 50}})
	gen, err := pd.Attribute(reqs, "trapz")
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(gen[0].EnergyJ-600) > 1e-6 {
		t.Errorf("generation-interval energy of turn 1 = %v, want 600", gen[0].EnergyJ)
	}
}

func TestAttributeResidentErrors(t *testing.T) {
	pd := flat100(t)
	for _, tc := range []struct {
		name string
		r    *record.Request
		want string
	}{
		{"backwards", resReq("x", 5, 5, 4, 3), `request 0 ("x"): done_at 4 is before sent_at 5`},
		{"nan", resReq("x", math.NaN(), 5, 6, 3), "not a finite time"},
		{"outside", resReq("x", 8, 9, 12, 3), "outside the samples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pd.AttributeResident([]*record.Request{tc.r}, "trapz")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := pd.AttributeResident([]*record.Request{nil}, "trapz"); err == nil {
		t.Error("nil request accepted")
	}
	if _, err := pd.AttributeResident(nil, "no-such-method"); err == nil {
		t.Error("unknown method accepted")
	}
}
