package matrix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/llmload/llmload/matrix/internal/fleet"
	"github.com/llmload/llmload/metrics"
)

// readPart reads a follower's report of its share of a cell and checks
// that it can be a measurement of that share: every count non-negative and
// consistent, tokens and requests no more than the share's streams could
// get in its time at [fleet.MaxTokenRate], every figure finite, every
// histogram of the recorder's geometry and agreeing with its summary, no
// key given twice, the shard's clock within [fleet.MaxClockOffset]. The
// error says what is wrong, for the cell's note on the shard.
func readPart(p fleet.Part, own fleet.Share) (*sharePart, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("its report was refused: "+format, args...)
	}
	if abs64(p.ClockOffset) > fleet.MaxClockOffset || p.ClockError < 0 || p.ClockError > fleet.MaxClockOffset {
		return nil, fmt.Errorf("its clock was %s the leader's (±%v), beyond the %v a shard may be off: set its clock (NTP) and run again",
			offsetWords(float64(p.ClockOffset)/float64(time.Millisecond)), p.ClockError, fleet.MaxClockOffset)
	}
	if len(p.Report) > fleet.MaxReportBytes {
		return nil, bad("%d bytes, above %d", len(p.Report), fleet.MaxReportBytes)
	}
	if err := uniqueKeys(p.Report); err != nil {
		return nil, bad("%v", err)
	}
	var part sharePart
	dec := json.NewDecoder(bytes.NewReader(p.Report))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&part); err != nil {
		return nil, bad("%v", err)
	}
	if err := plausible(&part, p.Streams, own); err != nil {
		return nil, bad("%v", err)
	}
	return &part, nil
}

// uniqueKeys returns an error for a JSON text with a key given twice in
// one object, which a decoder would take the last of.
func uniqueKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	type object struct {
		keys   map[string]bool
		expect bool // the next token is a key
	}
	var stack []*object
	for {
		t, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.expect {
			if d, ok := t.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k, _ := t.(string)
			if top.keys[k] {
				return fmt.Errorf("the key %q is given twice in one object", clip(k))
			}
			top.keys[k], top.expect = true, false
			continue
		}
		if top != nil && top.keys != nil {
			top.expect = true // a value read: a key or the end comes next
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, &object{keys: map[string]bool{}, expect: true})
		case json.Delim('['):
			stack = append(stack, &object{})
		case json.Delim(']'), json.Delim('}'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].keys != nil {
				stack[len(stack)-1].expect = true
			}
		}
	}
}

// plausible checks a follower's part against the share it was given.
func plausible(p *sharePart, streams int, own fleet.Share) error {
	if streams < 1 || streams > MaxStreams {
		return fmt.Errorf("a share of %d streams", streams)
	}
	for _, s := range []struct{ name, text string }{
		{"warmup_ended", p.WarmupEnded}, {"error", p.Error}, {"health.reason", p.Health.Reason},
	} {
		if len(s.text) > fleet.MaxText {
			return fmt.Errorf("its %s is %d bytes, above %d", s.name, len(s.text), fleet.MaxText)
		}
	}
	s := p.Recording.Summary
	if w := s.Window.Duration(); w < 0 || w > own.Duration+time.Second {
		return fmt.Errorf("its window of %v, for a window of %v", w, own.Duration)
	}
	// The share's whole time, warm-up and drain included, bounds what it
	// can have sent and counted.
	span := own.WarmupMin + own.WarmupTimeout + own.Duration + time.Minute
	most := float64(streams) * span.Seconds() * fleet.MaxTokenRate
	counts := []struct {
		name string
		n    int
	}{
		{"requests", s.Requests}, {"warmup", s.WarmupRequests}, {"completed", s.Completed},
		{"completed_outside", s.CompletedOutside}, {"completed_tokens", s.CompletedTokens},
		{"failed", s.Failed}, {"canceled", s.Canceled}, {"missed", s.Missed},
		{"output_tokens", s.OutputTokens}, {"good", s.Good},
	}
	for _, c := range counts {
		if c.n < 0 {
			return fmt.Errorf("%s is %d, below 0", c.name, c.n)
		}
		if float64(c.n) > most {
			return fmt.Errorf("%s is %d, more than %d streams could count in %v at %d tokens a second each",
				c.name, c.n, streams, span, fleet.MaxTokenRate)
		}
	}
	if n := s.WarmupRequests + s.Completed + s.CompletedOutside + s.Failed + s.Canceled; n > s.Requests {
		return fmt.Errorf("%d requests ended of %d sent", n, s.Requests)
	}
	if s.Missed > s.Canceled || s.Good > s.Requests {
		return fmt.Errorf("%d missed of %d canceled, %d good of %d requests", s.Missed, s.Canceled, s.Good, s.Requests)
	}
	for k, n := range s.Errors {
		if n < 0 || n > s.Failed {
			return fmt.Errorf("%d errors of kind %v, of %d failed", n, k, s.Failed)
		}
	}
	for k, n := range s.Sources {
		if n < 0 || n > s.Requests {
			return fmt.Errorf("%d requests counted by %v, of %d", n, k, s.Requests)
		}
	}
	if s.MeasuredFor < 0 || s.MeasuredFor > s.Window.Duration()+time.Second {
		return fmt.Errorf("measured for %v in a window of %v", s.MeasuredFor, s.Window.Duration())
	}
	figures := []struct {
		name    string
		v, most float64
	}{
		{"total_tok_s", s.OutputTokensPerSec, float64(streams) * fleet.MaxTokenRate},
		{"per_request_tok_s", s.PerRequestTokensPerSec, math.MaxFloat64},
		{"avg_active", s.AvgActive, float64(streams)},
		{"goodput", s.Goodput, math.MaxFloat64},
		{"health.cpu", p.Health.CPU, 1.5},
	}
	if st := p.Streams; st != nil {
		n := float64(streams)
		figures = append(figures, []struct {
			name    string
			v, most float64
		}{
			{"streams.avg_decoding", st.AvgDecoding, n}, {"streams.avg_waiting", st.AvgWaiting, n},
			{"streams.peak_decoding", float64(st.PeakDecoding), n}, {"streams.ceiling", float64(st.Ceiling), n},
			{"streams.ceiling_share", st.CeilingShare, 1}, {"streams.all_share", st.AllShare, 1},
			{"streams.waiting_share", st.WaitingShare, 1}, {"streams.samples", float64(st.Samples), most},
			{"streams.launched", float64(st.Launched), most}, {"streams.mean_wait_ms", st.MeanWaitMs, span.Seconds() * 1000},
			{"streams.decode_ms", st.DecodeMs, math.MaxFloat64},
		}...)
	}
	for _, f := range figures {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || f.v > f.most*(1+1e-9) {
			return fmt.Errorf("%s is %g, not a figure of %d streams", f.name, f.v, streams)
		}
	}
	if p.Warmup < 0 || time.Duration(p.Warmup) > span {
		return fmt.Errorf("a warm-up of %v", time.Duration(p.Warmup))
	}
	for _, d := range []metrics.Distribution{s.TTFT, s.TBT, s.ITL, s.TPOT, s.Latency, s.ClientWait, p.Health.Lag} {
		if d.Count < 0 || d.Min < 0 || d.Mean < 0 || d.P50 < 0 || d.P90 < 0 || d.P99 < 0 || d.Max < 0 {
			return errors.New("a distribution with negative figures")
		}
	}
	// Every histogram agrees with its summary (the merge's own check).
	if _, err := metrics.MergeRecordings(p.Recording); err != nil {
		return err
	}
	return nil
}

// boundName returns a shard's name cut to fleet.MaxNameBytes.
func boundName(s string) string {
	if len(s) <= fleet.MaxNameBytes {
		return s
	}
	return clip(s[:fleet.MaxNameBytes])
}

// clip returns s cut to 64 bytes, for an error that quotes a peer's text.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "…"
}
