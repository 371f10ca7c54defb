package capacity

import "slices"

// Cell is one cell of a context × concurrency grid and its verdict.
type Cell struct {
	ContextTokens int `json:"context_tokens"` // prompt tokens of each request
	Concurrency   int `json:"concurrency"`    // requests at once
	Verdict
}

// Grid is the verdicts of a context × concurrency grid under one set of
// limits: the predicted grid of a speed test before anything is sent.
type Grid struct {
	Limits      Limits `json:"limits"`      // what the cells were checked against
	Contexts    []int  `json:"contexts"`    // the rows: prompt tokens
	Concurrency []int  `json:"concurrency"` // the columns: requests at once
	MaxOutput   int    `json:"max_output"`  // output tokens of each request
	// Cells are in row order: Cells[i*len(Concurrency)+j] is Contexts[i]
	// × Concurrency[j].
	Cells []Cell `json:"cells"`
}

// Grid checks every cell of contexts × concurrency, with up to maxOutput
// output tokens a request, against l (see [Limits.Check]).
func (l Limits) Grid(contexts, concurrency []int, maxOutput int) *Grid {
	g := &Grid{
		Limits:      l,
		Contexts:    slices.Clone(contexts),
		Concurrency: slices.Clone(concurrency),
		MaxOutput:   maxOutput,
		Cells:       make([]Cell, 0, len(contexts)*len(concurrency)),
	}
	for _, c := range contexts {
		for _, n := range concurrency {
			g.Cells = append(g.Cells, Cell{ContextTokens: c, Concurrency: n, Verdict: l.Check(c, n, maxOutput)})
		}
	}
	return g
}

// mark is the verdict's mark in a printed grid: "risk" for a cell the
// estimate's range may or may not hold, else by the reason: "ok", "ok?" (limits unknown), "queue",
// "KV" or "len".
func (v Verdict) mark() string {
	if v.AtRisk {
		return "risk"
	}
	switch v.Reason {
	case WithinLimits:
		return "ok"
	case LimitsUnknown:
		return "ok?"
	case OverKVTokens:
		return "KV"
	case OverMaxRunning:
		return "queue"
	case OverMaxModelLen:
		return "len"
	}
	return "?"
}
