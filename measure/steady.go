package measure

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/joulebench/joulebench/archive/record"
)

// SteadyParams configures the steady-state search.
type SteadyParams struct {
	Window     int     // W: requests per window (≥ 2)
	CVMax      float64 // a window qualifies when its CV < CVMax (> 0)
	MinWindows int     // at least this many non-overlapping windows (≥ 1)
	// FormalEnd is the end of the formal stage, the end of the steady span;
	// ≤ 0 means the latest DoneAt of the requests.
	FormalEnd float64
	Method    string // energy method for attribution and the span
	// SpanStart says where the steady span starts; "" is
	// SpanFirstCompletion.
	SpanStart SpanStart
	// Shapes, when not nil, keeps the requests' token shapes for other
	// functions of the same evaluation on the same requests (RequestsIn),
	// or has them from one.
	Shapes *Shapes
}

// SpanStart names where the steady span starts in its first qualifying
// window (docs/methodology.md, "Steady state").
type SpanStart string

const (
	// SpanFirstCompletion starts the span at the completion of the first
	// qualifying window's first request: the windows are formed in
	// completion order, so that is where the window starts (the method's
	// "from the start of the first qualifying window"). The default.
	SpanFirstCompletion SpanStart = "first_completion"
	// SpanEarliestFirstToken starts the span at the earliest first token
	// among the window's requests (joulebench's earlier reading). When
	// every request is sent at once, that is the first tokens of the
	// first batch: the span then covers the ramp before steady state.
	SpanEarliestFirstToken SpanStart = "earliest_first_token"
)

// ParseSpanStart returns the reading named s ("" is the default).
func ParseSpanStart(s string) (SpanStart, error) {
	switch SpanStart(s) {
	case "":
		return SpanFirstCompletion, nil
	case SpanFirstCompletion, SpanEarliestFirstToken:
		return SpanStart(s), nil
	}
	return "", fmt.Errorf("span start %q is not %s or %s", s, SpanFirstCompletion, SpanEarliestFirstToken)
}

// Steady is the result of the steady-state search.
type Steady struct {
	Reached bool
	// Reason says why steady state was not reached (empty when it was).
	Reason string
	// StartIndex is the 1-based number, in completion order, of the first
	// request of the first qualifying window; EndIndex that of the last
	// request of the run (the number of successful requests).
	StartIndex, EndIndex         int
	StartRequestID, EndRequestID string
	// SpanStart is the reading of the span's start that was used.
	SpanStart SpanStart
	// Start, End: the steady span, from the DoneAt of the first request
	// of the first qualifying window (SpanFirstCompletion) or the
	// earliest FirstTokenAt in that window (SpanEarliestFirstToken) to
	// FormalEnd.
	Start, End                 float64
	EnergyJ, Tokens, JPerToken float64   // energy, output tokens and their ratio over the span
	Windows                    int       // non-overlapping windows checked from the start index
	WindowCVs                  []float64 // CV of each of those windows
	// WindowJPerToken is, when steady state was reached, the J/token of
	// the span cut at the start of each of those windows (windowSpans):
	// the values batch means are drawn from (docs/methodology.md,
	// "Steady state"); nil when a piece has no output token.
	WindowJPerToken []float64
}

// SteadyState searches for steady state (docs/methodology.md, "Steady state").
//
// reqs are the successful formal requests (failed ones, if passed, are
// ignored). They are put in completion order (DoneAt, ties by ID, then input
// order) and numbered 1…N. Per-request J/token comes from Attribute; the
// requests without a generation interval (DoneAt == FirstTokenAt, or no
// output tokens) have no J/token and are left out of the windows, which are
// formed over the n remaining requests in completion order (they still count
// in the numbering and in the span's tokens).
//
// For each window start s (W consecutive requests, sliding by one) the CV is
// the population std / mean of its J/token values. Steady state starts at the
// first s such that every full non-overlapping window s, s+W, s+2W, … that
// fits in the n requests has CV < CVMax, and there are at least MinWindows of
// them. Its span runs from the start of window s to FormalEnd: the DoneAt
// of its first request (the window's start in the order the windows are
// formed; SpanFirstCompletion, the default) or, with
// SpanEarliestFirstToken, the earliest FirstTokenAt among its W requests.
// Its J/token is Energy(span, Method) over the output tokens
// generated in the span (pro rata, as in Attribute; every request passed
// counts, not only those of the windows).
//
// Not reached: Reached is false and Reason says why; when some start had
// enough windows, Windows and WindowCVs describe the best one (the start
// whose largest window CV is smallest, the earliest among equals).
// O(n log n + chunks).
func (p *PowerData) SteadyState(reqs []*record.Request, sp SteadyParams) (Steady, error) {
	if err := sp.check(); err != nil {
		return Steady{}, err
	}
	if _, err := p.resolveMethod(sp.Method); err != nil {
		return Steady{}, fmt.Errorf("steady state: %w", err)
	}
	spanStart, err := ParseSpanStart(string(sp.SpanStart))
	if err != nil {
		return Steady{}, fmt.Errorf("steady state: %w", err)
	}
	sp.SpanStart = spanStart
	order, idx, err := completionOrder(reqs)
	if err != nil {
		return Steady{}, err
	}
	res := Steady{SpanStart: sp.SpanStart}
	if len(order) == 0 {
		res.Reason = "no successful requests"
		return res, nil
	}
	res.EndIndex = len(order)
	res.EndRequestID = order[len(order)-1].ID

	r, err := p.rate(reqs, order, idx, sp)
	if err != nil {
		return Steady{}, err
	}
	n, w := len(r.xs), sp.Window
	if n < sp.MinWindows*w {
		res.Reason = fmt.Sprintf("only %d requests with a J/token, fewer than the %d needed for %d windows of %d%s",
			n, sp.MinWindows*w, sp.MinWindows, w, r.excluded)
		return res, nil
	}
	k, best, worst := steadyStart(r.xs, sp)
	if k < 0 {
		res.Reason, res.Windows, res.WindowCVs = notSteady(r, best, worst[best], sp)
		return res, nil
	}
	return p.steadySpan(res, order, r, k, sp)
}

// check rejects parameters the search cannot use.
func (sp SteadyParams) check() error {
	if sp.Window < 2 {
		return fmt.Errorf("steady state: window must be ≥ 2, got %d", sp.Window)
	}
	if sp.MinWindows < 1 {
		return fmt.Errorf("steady state: min windows must be ≥ 1, got %d", sp.MinWindows)
	}
	if math.IsNaN(sp.CVMax) || math.IsInf(sp.CVMax, 0) || sp.CVMax <= 0 {
		return fmt.Errorf("steady state: cv max must be a positive number, got %v", sp.CVMax)
	}
	if math.IsNaN(sp.FormalEnd) || math.IsInf(sp.FormalEnd, 0) {
		return fmt.Errorf("steady state: formal end is %v", sp.FormalEnd)
	}
	return nil
}

// completionOrder returns the successful requests in completion order
// (DoneAt, ties by ID, then input order) and each one's index in reqs.
func completionOrder(reqs []*record.Request) ([]*record.Request, []int, error) {
	// Sort (done_at, input index) keys rather than the pointers: no pointer
	// chasing in the comparisons except on ties.
	type key struct {
		done float64
		i    int
	}
	keys := make([]key, 0, len(reqs))
	for i, r := range reqs {
		if r == nil {
			return nil, nil, fmt.Errorf("steady state: request %d is nil", i)
		}
		if !r.OK {
			continue
		}
		if math.IsNaN(r.DoneAt) || math.IsInf(r.DoneAt, 0) {
			return nil, nil, fmt.Errorf("steady state: request %d (%q): done_at is %v", i, r.ID, r.DoneAt)
		}
		keys = append(keys, key{r.DoneAt, i})
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.done, b.done); c != 0 {
			return c
		}
		if c := strings.Compare(reqs[a.i].ID, reqs[b.i].ID); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i) // input order
	})
	order := make([]*record.Request, len(keys))
	idx := make([]int, len(keys))
	for j, k := range keys {
		order[j], idx[j] = reqs[k.i], k.i
	}
	return order, idx, nil
}

// rated are the requests in completion order with their token shapes,
// and the J/token of those with a generation interval.
type rated struct {
	// all holds the shapes of the requests passed to SteadyState; idx[i]
	// is the entry of the i-th in completion order (shape).
	all *shapeList
	idx []int
	pos []int     // completion positions of the rated requests
	xs  []float64 // their J/token
	// excluded says how many have no J/token ("" when none), for reasons.
	excluded string
}

// shape is the token shape of the i-th request in completion order.
func (r *rated) shape(i int) *tokenShape { return &r.all.shapes[r.idx[i]] }

// rate attributes energy to the requests of order (idx: their indices in
// reqs, whose shapes sp.Shapes may hold).
func (p *PowerData) rate(reqs, order []*record.Request, idx []int, sp SteadyParams) (rated, error) {
	all := sp.Shapes.of(reqs)
	energy, err := p.attributeEnergy(order, sp.Method, all, idx)
	if err != nil {
		return rated{}, fmt.Errorf("steady state: %w", err)
	}
	r := rated{all: all, idx: idx, pos: make([]int, 0, len(order)), xs: make([]float64, 0, len(order))}
	for i := range order {
		if sh := r.shape(i); sh.kind == shapeGen {
			r.pos = append(r.pos, i)
			r.xs = append(r.xs, energy[i]/sh.tokens)
		}
	}
	if d := len(order) - len(r.xs); d > 0 {
		r.excluded = fmt.Sprintf("; %d of %d successful requests have no generation interval and no J/token", d, len(order))
	}
	return r, nil
}

// steadyStart returns the first window start k whose chain of
// non-overlapping windows all qualify (-1: none), and else the best start
// (the smallest largest CV, the earliest among equals); worst[s] is the
// largest CV of start s's chain.
func steadyStart(xs []float64, sp SteadyParams) (k, best int, worst []float64) {
	n, w := len(xs), sp.Window
	cvs := windowCVs(xs, w, sp.CVMax)
	// chain[s]: window s and every later non-overlapping window that fits
	// qualify; worst[s]: the largest CV among them.
	chain := make([]bool, n-w+1)
	worst = make([]float64, n-w+1)
	for s := n - w; s >= 0; s-- {
		chain[s] = cvs[s] < sp.CVMax
		worst[s] = cvs[s]
		if s+2*w <= n {
			chain[s] = chain[s] && chain[s+w]
			worst[s] = max(worst[s], worst[s+w])
		}
	}
	k, best = -1, -1
	for s := 0; s+sp.MinWindows*w <= n; s++ { // (n-s)/w ≥ MinWindows
		if chain[s] {
			k = s
			break
		}
		// prefer the earliest start among (near-)equal ones
		if best < 0 || worst[s] < worst[best]*(1-1e-9) {
			best = s
		}
	}
	return k, best, worst
}

// notSteady says why steady state was not reached, with the windows of the
// best start (worst: its largest CV) when they have a CV.
func notSteady(r rated, best int, worst float64, sp SteadyParams) (reason string, windows int, windowCVs []float64) {
	n, w := len(r.xs), sp.Window
	reason = fmt.Sprintf("no start index k gives ≥%d consecutive non-overlapping %d-request windows with CV < %s (n=%d",
		sp.MinWindows, w, fmtNum(sp.CVMax), n)
	cvs := exactCVs(r.xs, best, w, (n-best)/w)
	if math.IsInf(worst, 1) || math.IsInf(slices.Max(cvs), 1) {
		return reason + "; every start has a window whose mean J/token is 0" + r.excluded + ")", 0, nil
	}
	reason += fmt.Sprintf(", best CV %.4g: the largest of the %d window CVs from request %d%s)",
		slices.Max(cvs), len(cvs), r.pos[best]+1, r.excluded)
	return reason, len(cvs), cvs
}

// steadySpan completes res for steady state from window start k: the span
// from the start of window k (sp.SpanStart) to the formal end, its energy,
// tokens and J/token.
func (p *PowerData) steadySpan(res Steady, order []*record.Request, r rated, k int, sp SteadyParams) (Steady, error) {
	n, w := len(r.xs), sp.Window
	res.Reached = true
	first := order[r.pos[k]]
	res.StartIndex = r.pos[k] + 1
	res.StartRequestID = first.ID
	res.Windows = (n - k) / w
	res.WindowCVs = exactCVs(r.xs, k, w, res.Windows)
	res.Start = spanStartAt(order, r.pos[k:k+w], sp.SpanStart)
	res.End = sp.FormalEnd
	if res.End <= 0 {
		for _, q := range order {
			res.End = max(res.End, q.DoneAt)
		}
	}
	if res.End < res.Start {
		return Steady{}, fmt.Errorf("steady state: formal end %s is before the steady span start %s", fmtT(res.End), fmtT(res.Start))
	}
	var err error
	if res.EnergyJ, err = p.Energy(res.Start, res.End, sp.Method); err != nil {
		return Steady{}, fmt.Errorf("steady state: span energy: %w", err)
	}
	for i := range order {
		res.Tokens += r.shape(i).tokensIn(res.Start, res.End)
	}
	if res.Tokens <= 0 {
		return Steady{}, fmt.Errorf("steady state: no output tokens in the span [%s, %s]", fmtT(res.Start), fmtT(res.End))
	}
	res.JPerToken = res.EnergyJ / res.Tokens
	if math.IsNaN(res.JPerToken) || math.IsInf(res.JPerToken, 0) {
		return Steady{}, fmt.Errorf("steady state: J/token is %v", res.JPerToken)
	}
	if res.WindowJPerToken, err = p.windowSpans(res, order, r, k, sp); err != nil {
		return Steady{}, err
	}
	return res, nil
}

// windowSpans returns the J/token of the steady span cut at the start of
// each of its windows: piece j runs from the completion of window j's
// first request (the span's start for the first) to that of window j+1's
// (the span's end for the last, which also holds the requests after the
// last full window), its energy over the output tokens generated in it
// (pro rata, as the span's). The pieces partition the span: their
// energies and tokens add up to the span's. nil when a piece has no
// output token.
func (p *PowerData) windowSpans(res Steady, order []*record.Request, r rated, k int, sp SteadyParams) ([]float64, error) {
	cnt, w := res.Windows, sp.Window
	b := make([]float64, cnt+1) // the pieces' boundaries
	b[0], b[cnt] = res.Start, res.End
	for j := 1; j < cnt; j++ {
		b[j] = min(max(b[j-1], order[r.pos[k+j*w]].DoneAt), res.End)
	}
	tok := make([]float64, cnt)
	for i := range order {
		sh := r.shape(i)
		if sh.kind == shapeNone || sh.done < b[0] || sh.first > b[cnt] {
			continue
		}
		j := sort.Search(cnt-1, func(x int) bool { return b[x+1] > sh.first }) // the piece holding its first token
		if sh.kind == shapeZeroLen {
			tok[j] += sh.tokens // counted once, in the piece its instant falls in
			continue
		}
		for ; j < cnt && b[j] < sh.done; j++ {
			tok[j] += sh.tokensIn(b[j], b[j+1])
		}
	}
	out := make([]float64, cnt)
	for j := range out {
		if tok[j] <= 0 {
			return nil, nil
		}
		e, err := p.Energy(b[j], b[j+1], sp.Method)
		if err != nil {
			return nil, fmt.Errorf("steady state: window %d energy: %w", j+1, err)
		}
		out[j] = e / tok[j]
	}
	return out, nil
}

// spanStartAt is where the span starts in the first qualifying window
// (win: the completion positions in order of its requests, the first first).
func spanStartAt(order []*record.Request, win []int, how SpanStart) float64 {
	if how == SpanEarliestFirstToken {
		start := math.Inf(1)
		for _, i := range win {
			start = min(start, order[i].FirstTokenAt)
		}
		return start
	}
	return order[win[0]].DoneAt
}

// windowCVs returns the CV of every window xs[s:s+w], from prefix sums of
// the values shifted by their mean (so that the sums stay small against the
// spread). A window whose mean is ≤ 0 gets +Inf. A CV within a relative
// 1e-9 of cvMax is recomputed exactly, so that rounding in the prefix sums
// cannot flip the comparison with cvMax.
func windowCVs(xs []float64, w int, cvMax float64) []float64 {
	n := len(xs)
	c, _ := meanVar(xs)
	s1 := make([]float64, n+1)
	s2 := make([]float64, n+1)
	for i, x := range xs {
		d := x - c
		s1[i+1] = s1[i] + d
		s2[i+1] = s2[i] + d*d
	}
	fw := float64(w)
	out := make([]float64, n-w+1)
	for s := range out {
		md := (s1[s+w] - s1[s]) / fw
		mean := c + md
		v := max(0, (s2[s+w]-s2[s])/fw-md*md)
		cv := math.Inf(1)
		if mean > 0 {
			cv = math.Sqrt(v) / mean
		}
		if math.Abs(cv-cvMax) <= 1e-9*cvMax || math.IsNaN(cv) {
			cv = exactCV(xs[s : s+w])
		}
		out[s] = cv
	}
	return out
}

// exactCV is the two-pass CV of one window; +Inf when the mean is ≤ 0.
func exactCV(win []float64) float64 {
	m, v := meanVar(win)
	if m <= 0 || math.IsNaN(m) {
		return math.Inf(1)
	}
	return math.Sqrt(v) / m
}

// exactCVs returns the two-pass CVs of count windows starting at s, s+w, ….
func exactCVs(xs []float64, s, w, count int) []float64 {
	out := make([]float64, count)
	for j := range out {
		out[j] = exactCV(xs[s+j*w : s+(j+1)*w])
	}
	return out
}
