package measure

import (
	"runtime"
	"slices"
	"sync"

	"github.com/joulebench/joulebench/archive/record"
)

// shapeList is the token shapes (shapeOf) of a list of requests, in its
// order, with each one's error (nil when none).
type shapeList struct {
	shapes []tokenShape
	errs   []error
}

// shapesMin is the fewest requests worth splitting shapesOf over cores.
const shapesMin = 1 << 12

// shapesOf computes the shapes of reqs, on up to GOMAXPROCS parts in
// parallel; a nil request gets none (its caller reports it).
func shapesOf(reqs []*record.Request) *shapeList {
	sl := &shapeList{shapes: make([]tokenShape, len(reqs)), errs: make([]error, len(reqs))}
	p := max(1, min(runtime.GOMAXPROCS(0), len(reqs)/shapesMin))
	var wg sync.WaitGroup
	for i := range p {
		lo, hi := i*len(reqs)/p, (i+1)*len(reqs)/p
		wg.Go(func() {
			for j := lo; j < hi; j++ {
				if reqs[j] != nil {
					sl.shapes[j], sl.errs[j] = shapeOf(reqs[j])
				}
			}
		})
	}
	wg.Wait()
	return sl
}

// Shapes keeps the token shapes of the last list of requests it was
// asked for, so that the functions of one evaluation that need the shapes
// of the same requests (SteadyState, RequestsIn) compute them once. A nil
// *Shapes keeps nothing. It is safe for concurrent use.
type Shapes struct {
	mu   sync.Mutex
	reqs []*record.Request
	list *shapeList
}

// of returns the shapes of reqs (shapesOf), computed or kept.
func (s *Shapes) of(reqs []*record.Request) *shapeList {
	if s == nil {
		return shapesOf(reqs)
	}
	s.mu.Lock()
	if slices.Equal(s.reqs, reqs) && s.list != nil {
		defer s.mu.Unlock()
		return s.list
	}
	s.mu.Unlock()
	sl := shapesOf(reqs)
	s.mu.Lock()
	s.reqs, s.list = slices.Clone(reqs), sl
	s.mu.Unlock()
	return sl
}
