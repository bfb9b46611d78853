package steps

import (
	"math"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/workflow"
	"github.com/joulebench/joulebench/workload"
)

// requestSetMeta is run.json's request_set for a frozen set sent as count
// requests: what it is, how it was drawn and, when downloaded, where from.
func requestSetMeta(set *workload.RequestSet, count int) archive.RequestSet {
	rs := archive.RequestSet{Source: set.Source, Format: set.Format, Count: count, SHA256: set.SHA256,
		Seed: set.Options.Seed, Unique: set.Unique, Sampling: set.Sampling}
	if o := set.Origin; o != nil {
		rs.Origin = &archive.DatasetOrigin{URL: o.URL, Repo: o.Repo, Revision: o.Revision, RequestedRevision: o.Requested,
			Path: o.Path, SHA256: o.SHA256, Size: o.Size}
	}
	return rs
}

// FormalRequests returns how many formal requests the profile's requests
// steps will send: each step's frozen set (Prepare) times its repeat,
// capped by max_requests. known is false when a step sends the whole
// dataset (count 0) and no set was frozen for it (d nil or not prepared).
func FormalRequests(l *workflow.Loaded, d *Deps) (n int, known bool) {
	known = true
	for _, st := range l.Steps {
		c, ok := st.Config.(*RequestsConfig)
		if !ok {
			continue
		}
		k := c.Count
		if d != nil {
			if set, ok := d.sets[st.Config]; ok {
				k = len(set.Prompts)
			}
		}
		if k == 0 {
			known = false
			continue
		}
		n += requestsSent(c, k)
	}
	return n, known
}

// requestsSent is how many requests a requests step sends from a set of
// n prompts: n times its repeat, capped by max_requests (saturating
// instead of overflowing).
func requestsSent(c *RequestsConfig, n int) int {
	k := n
	if c.Repeat > 1 {
		if n > math.MaxInt/c.Repeat {
			k = math.MaxInt
		} else {
			k = n * c.Repeat
		}
	}
	if c.MaxRequests > 0 {
		k = min(k, c.MaxRequests)
	}
	return k
}
