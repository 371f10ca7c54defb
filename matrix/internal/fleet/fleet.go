// Package fleet is the seam between a matrix Runner and the processes of
// a sharded run: the cell's shares the Runner hands out, the parts it
// gets back, and the interfaces package matrix/shard implements over
// HTTP. It is internal: a user sets a *shard.Leader as the Runner's Fleet
// and never names these types.
package fleet

import (
	"context"
	"encoding/json"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// A Fleet runs the cells of a sharded matrix on several processes: the
// Runner's own, the leader, and followers that joined it, each keeping its
// share of a cell's streams in flight against the server.
type Fleet interface {
	// Shards returns how many processes the fleet means to run each cell
	// on, the leader's included.
	Shards() int
	// StartCell splits sh.Concurrency among the leader and the followers
	// that can take part, gives each follower its share, and returns the
	// cell in progress; an error fails the cell. The shares' times are on
	// the leader's clock. When ctx ends, the cell ends on every shard.
	StartCell(ctx context.Context, sh Share) (Cell, error)
}

// A Cell is a cell in progress on a [Fleet].
type Cell interface {
	// Own returns the leader's share: its streams and launch time.
	Own() Share
	// Control is the leader's share's: the window opens once every
	// shard's warm-up is done.
	Control
	// Collect waits for the followers' parts of the cell and returns them
	// in shard order; a shard that died, fell silent or failed has no
	// report and says why. Every wait has a deadline. It is called once,
	// after the leader's own share has ended.
	Collect(ctx context.Context) []Part
}

// Control connects a share to the rest of its cell.
type Control interface {
	// Ready tells the cell that the share's warm-up is done, and why:
	// queued when it found the server queuing its streams, timedOut when
	// it ran to its timeout. It is called once.
	Ready(reason string, queued, timedOut bool)
	// WindowStart returns when the window starts, on the share's clock,
	// once the leader has set it.
	WindowStart() (time.Time, bool)
}

// A CellObserver is a Control that wants each share's generator before it
// runs, to read its progress and see its requests.
type CellObserver interface {
	// OnCell is called with the generator of the share of the cell of
	// contextTokens and streams (the whole cell's) before it runs.
	OnCell(contextTokens, streams int, g *loadgen.Generator)
}

// Share is one shard's part of a cell: the streams it keeps in flight and
// how its warm-up and window go. Durations are wall time.
type Share struct {
	// Seq numbers the cells of a run, from 1.
	Seq           int `json:"seq"`
	ContextTokens int `json:"context_tokens"`
	// Concurrency is the cell's, over every shard; Streams this shard's
	// part of it.
	Concurrency int `json:"concurrency"`
	Streams     int `json:"streams"`

	// The request every stream sends, again and again.
	API       loadgen.API `json:"api"`
	Model     string      `json:"model,omitempty"`
	Prompt    string      `json:"prompt"`
	Images    []string    `json:"images,omitempty"`
	MaxTokens int         `json:"max_tokens"`
	// ServerTimings asks the server for its own timings of each request
	// (include_metrics), to split the TTFT.
	ServerTimings bool `json:"server_timings,omitempty"`

	// Launch is when the streams start, on the clock of the process that
	// runs the share (the leader's in what it sends; a follower moves it
	// to its own clock).
	Launch time.Time `json:"launch"`
	// WarmupMin, Flow and QueueAfter shape the warm-up as a single
	// process's cell does; WarmupTimeout ends it, the share then reporting
	// that it timed out.
	WarmupMin     time.Duration `json:"warmup_min_ns"`
	Flow          time.Duration `json:"flow_ns"`
	QueueAfter    time.Duration `json:"queue_after_ns"`
	WarmupTimeout time.Duration `json:"warmup_timeout_ns"`
	// Duration is the window's length.
	Duration time.Duration `json:"duration_ns"`
	// Series is the interval of the share's time series, which its report
	// carries for the leader to merge; 0 keeps none.
	Series time.Duration `json:"series_ns,omitempty"`
	// SLO, in wall time, decides goodput.
	SLO *metrics.SLO `json:"slo,omitempty"`
}

// Part is a follower's part of a cell as the leader received it.
type Part struct {
	// Index numbers the shards: 0 is the leader, followers from 1 in the
	// order they joined. Name is the follower's, Streams its share.
	Index   int
	Name    string
	Streams int
	// ClockOffset is the follower's clock minus the leader's, ClockError
	// its bound.
	ClockOffset, ClockError time.Duration
	// Report is the follower's report as it sent it (JSON, see
	// [RunShare]); nil when the shard was lost, and Lost says why.
	Report json.RawMessage
	Lost   string
}

// Result is what a follower's share of a cell gives: the report to send
// to the leader, and what its log says of it.
type Result struct {
	Report       json.RawMessage
	OutputTokens int
	Error        string
}

// RunShare runs a follower's share of a cell with c, telling ctl when its
// warm-up is done and measuring the window ctl gives, and returns its
// report. Package matrix sets it (it runs the share as one of its cells);
// package matrix/shard, which imports matrix, calls it.
var RunShare func(ctx context.Context, c *loadgen.Client, sh Share, ctl Control) Result

// Split splits n streams among shards as evenly as possible, the first
// shards taking one more when n does not divide: 10 over 3 is 4, 3, 3.
// Shards beyond n get none; fewer than one shard is one.
func Split(n, shards int) []int {
	shards = max(shards, 1)
	out := make([]int, shards)
	for i := range out {
		out[i] = n / shards
		if i < n%shards {
			out[i]++
		}
	}
	return out
}

// Largest returns the largest share of n streams over shards, as Split
// gives it, without building the split.
func Largest(n, shards int) int {
	shards = max(shards, 1)
	l := n / shards
	if n%shards != 0 {
		l++
	}
	return l
}

// Bounds every side of a sharded run holds its peers to.
const (
	// MaxClockOffset bounds a follower's clock offset to the leader's
	// (and the age of a signed request): a follower further off is
	// dropped from the cell, named, rather than trusted with its window.
	MaxClockOffset = 10 * time.Minute
	// MaxReportBytes bounds a follower's report of a cell: its
	// histograms in HdrHistogram's compressed encoding take tens of
	// kilobytes for a cell of 1,000 streams.
	MaxReportBytes = 16 << 20
	// MaxContextTokens is the longest prompt a spec may ask for, 16M
	// tokens: beyond the context of any model served today, and a prompt
	// of that many tokens is already about 100 MB of text, built and kept
	// in memory for its cell.
	MaxContextTokens = 16 << 20
	// MaxImageBytes bounds the images of a share's request, as data
	// URLs, all together.
	MaxImageBytes = 4 << 20
	// MaxImages bounds the images of a request.
	MaxImages = 64
	// MaxNameBytes bounds a follower's name, as a host's name is bounded.
	MaxNameBytes = 253
	// MaxText bounds every other string a peer sends (a reason, an
	// error).
	MaxText = 4 << 10
	// MaxTokenRate is the most output tokens a stream is believed to get
	// a second: far above any server's decode rate, so a report beyond it
	// is not a measurement.
	MaxTokenRate = 100_000
)
