package measure

import (
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/joulebench/joulebench/archive/record"
)

// shapeList is the token shapes (shapeOf) of a list of requests, in its
// order, with each one's error (err).
type shapeList struct {
	shapes []tokenShape
	// errs holds the errors by index; nil when there are none (the usual
	// case: no list of as many nil errors as requests).
	errs map[int]error
}

// err is the error of request i's shape (nil when none).
func (sl *shapeList) err(i int) error { return sl.errs[i] }

// shapesMin is the fewest requests worth splitting shapesOf over cores.
const shapesMin = 1 << 12

// shapesOf computes the shapes of reqs, on up to GOMAXPROCS parts in
// parallel; a nil request gets none (its caller reports it).
func shapesOf(reqs []*record.Request) *shapeList {
	sl := &shapeList{shapes: make([]tokenShape, len(reqs))}
	p := max(1, min(runtime.GOMAXPROCS(0), len(reqs)/shapesMin))
	errs := make([]map[int]error, p)
	var wg sync.WaitGroup
	for i := range p {
		lo, hi := i*len(reqs)/p, (i+1)*len(reqs)/p
		wg.Go(func() {
			var scratch []float64 // packed token times, unpacked
			var ar floatArena     // the segments
			for j := lo; j < hi; j++ {
				if reqs[j] == nil {
					continue
				}
				var err error
				if sl.shapes[j], err = shapeOfBuf(reqs[j], &scratch, &ar); err != nil {
					if errs[i] == nil {
						errs[i] = map[int]error{}
					}
					errs[i][j] = err
				}
			}
		})
	}
	wg.Wait()
	for _, m := range errs {
		if sl.errs == nil {
			sl.errs = m
			continue
		}
		maps.Copy(sl.errs, m)
	}
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
