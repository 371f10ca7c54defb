package sweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmload/llmload/internal/background"
	"github.com/llmload/llmload/loadgen"
)

// The thresholds of the over-capacity rule: see [Run].
const (
	saturationTick   = 100 * time.Millisecond
	saturationSpan   = 2 * time.Second // the least span of samples judged for growth
	saturationAtCap  = 10              // samples in a row at the cap: a second
	saturationSettle = 10              // requests completed before growth is judged
)

// errOverCapacity is the cause given to an open-loop run stopped early.
var errOverCapacity = errors.New("sweep: over capacity: the requests in flight grew without bound")

// saturationWatch samples an open-loop Generator's requests in flight and
// reports why the run is over capacity, or "".
type saturationWatch struct {
	cap      int
	atCap    int
	inFlight []int // since the run settled
}

// watchSaturation runs until done is closed, and stops the run with
// errOverCapacity, setting *why, when it finds it over capacity.
func watchSaturation(g *loadgen.Generator, limit int, stop context.CancelCauseFunc, why *string, done <-chan struct{}) {
	w := &saturationWatch{cap: limit}
	background.Every(done, saturationTick, func(time.Time) bool {
		p := g.Progress()
		if p.Phase != loadgen.PhaseWindow {
			return true
		}
		if reason := w.sample(p.InFlight, p.Snapshot.Recorded); reason != "" {
			*why = reason
			stop(errOverCapacity)
			return false
		}
		return true
	})
}

// sample adds one sample and reports why the run is over capacity, or "".
func (w *saturationWatch) sample(inFlight int, completed int64) string {
	if inFlight >= w.cap {
		w.atCap++
		if w.atCap >= saturationAtCap {
			return fmt.Sprintf("stopped early: the requests in flight stayed at the cap of %d for %v, arrivals waiting for a free slot", w.cap, saturationAtCap*saturationTick)
		}
	} else {
		w.atCap = 0
	}
	if completed < saturationSettle {
		return ""
	}
	w.inFlight = append(w.inFlight, inFlight)
	n := len(w.inFlight)
	if time.Duration(n)*saturationTick < saturationSpan {
		return ""
	}
	q := n / 4
	first, last := w.inFlight[:q], w.inFlight[n-q:]
	lo, hi := 0, last[0]
	var sumFirst, sumLast int
	for i := range q {
		lo, hi = max(lo, first[i]), min(hi, last[i])
		sumFirst += first[i]
		sumLast += last[i]
	}
	meanFirst, meanLast := float64(sumFirst)/float64(q), float64(sumLast)/float64(q)
	if hi > lo && meanLast >= 2*meanFirst+8 {
		return fmt.Sprintf("stopped early: the requests in flight grew from %.0f to %.0f over %v, the server's queue growing without bound", meanFirst, meanLast, time.Duration(n)*saturationTick)
	}
	return ""
}
