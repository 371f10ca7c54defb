package main

import (
	"math"
	"strconv"
	"time"

	"github.com/llmload/llmload/internal/procstat"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// secs is a duration that marshals to JSON as a number of seconds.
type secs time.Duration

func (d secs) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(d).Seconds(), 'f', 3, 64), nil
}

func (d *secs) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	*d = secs(math.Round(f * float64(time.Second)))
	return err
}

func (d secs) String() string { return time.Duration(d).Round(100 * time.Millisecond).String() }

// Proc is one process's figures at a sample.
type Proc struct {
	PID int `json:"pid"`
	// RSS is the resident set size (VmRSS); RSSIsPeak says it is the peak
	// from getrusage instead, where there is no /proc.
	RSS       int64 `json:"rss_bytes"`
	RSSIsPeak bool  `json:"rss_is_peak,omitempty"`
	runtimeStats
	// CPU is the CPU time used over the interval ÷ the interval: 1 is one
	// core busy all along.
	CPU float64 `json:"cpu_cores"`
	// Err says why some figure could not be read.
	Err string `json:"error,omitempty"`

	cpuTime time.Duration
}

// Engine is the simulator engine's state at a sample.
type Engine struct {
	Running int `json:"running"`
	Waiting int `json:"waiting"`
	// Behind is the wall time the engine fell behind its schedule and
	// skipped, since it started.
	Behind secs `json:"behind_s"`
	// Chunks and Tokens count the chunks written and the tokens in them,
	// since the start.
	Chunks int64 `json:"chunks"`
	Tokens int64 `json:"tokens"`
	// TokensPerChunk is tokens ÷ chunks over the interval: above 1 when
	// the handlers fall behind the engine and merge tokens.
	TokensPerChunk float64 `json:"tokens_per_chunk"`
}

// Sample is one report line.
type Sample struct {
	Elapsed   secs  `json:"elapsed_s"`
	Client    Proc  `json:"client"`
	Simulator *Proc `json:"simulator,omitempty"`
	// Engine is the simulator's engine; nil with -url.
	Engine *Engine `json:"engine,omitempty"`

	// InFlight counts streams sent and not finished, WithToken those of
	// them that have their first token.
	InFlight  int `json:"in_flight"`
	WithToken int `json:"with_token"`
	// Launched counts requests started, Finished those ended, Failed those
	// that failed (cancellations excluded), since the start.
	Launched int64 `json:"launched"`
	Finished int64 `json:"finished"`
	Failed   int64 `json:"failed"`
	// Tokens counts output tokens received since the start.
	Tokens int64 `json:"tokens"`
	// TokensPerSec is over the interval since the previous sample,
	// CumTokensPerSec since the start.
	TokensPerSec    float64 `json:"tok_s"`
	CumTokensPerSec float64 `json:"cum_tok_s"`
	// Errors counts failed requests by kind since the start.
	Errors map[metrics.ErrorKind]int `json:"errors,omitempty"`
}

// sampler takes the samples of a run.
type sampler struct {
	start   time.Time
	sim     *simulator // nil with -url
	rec     *metrics.Recorder
	samples []Sample
}

func newSampler(sim *simulator, rec *metrics.Recorder) *sampler {
	return &sampler{start: time.Now(), sim: sim, rec: rec}
}

// take takes a sample, given the generator's progress, and keeps it.
func (sm *sampler) take(p loadgen.Progress) Sample {
	now := time.Now()
	s := Sample{
		Elapsed:   secs(now.Sub(sm.start)),
		Client:    readProc(0),
		InFlight:  p.InFlight,
		WithToken: p.WithToken,
		Launched:  p.Launched,
		Finished:  p.Recorded,
		Failed:    p.Failed,
		Tokens:    p.Tokens,
	}
	s.Client.runtimeStats = readRuntime()
	if p.Failed > 0 {
		s.Errors = sm.rec.Recording(metrics.ScopeWindow).Summary.Errors
	}
	if sm.sim != nil {
		sp := readProc(sm.sim.pid)
		if st, err := sm.sim.stats(); err != nil {
			sp.Err = err.Error()
		} else {
			sp.runtimeStats = st.Runtime
			s.Engine = &Engine{
				Running: st.Engine.Running, Waiting: st.Engine.Waiting, Behind: secs(st.Engine.Behind),
				Chunks: st.Engine.Chunks, Tokens: st.Engine.WrittenTokens,
			}
		}
		s.Simulator = &sp
	}
	if n := len(sm.samples); n > 0 {
		prev := sm.samples[n-1]
		dt := time.Duration(s.Elapsed - prev.Elapsed).Seconds()
		if dt > 0 {
			s.TokensPerSec = float64(s.Tokens-prev.Tokens) / dt
			s.Client.CPU = (s.Client.cpuTime - prev.Client.cpuTime).Seconds() / dt
			if s.Simulator != nil && prev.Simulator != nil && s.Simulator.cpuTime > 0 {
				s.Simulator.CPU = (s.Simulator.cpuTime - prev.Simulator.cpuTime).Seconds() / dt
			}
			if e, pe := s.Engine, prev.Engine; e != nil && pe != nil && e.Chunks > pe.Chunks {
				e.TokensPerChunk = float64(e.Tokens-pe.Tokens) / float64(e.Chunks-pe.Chunks)
			}
		}
		if el := time.Duration(s.Elapsed).Seconds(); el > 0 {
			s.CumTokensPerSec = float64(s.Tokens) / el
		}
	}
	sm.samples = append(sm.samples, s)
	return s
}

// readProc reads the RSS and CPU time of process pid (0: this one).
func readProc(pid int) Proc {
	p := Proc{PID: pid}
	if pid == 0 {
		p.PID = ownPID
	}
	var err error
	if p.RSS, p.RSSIsPeak, err = procstat.RSS(pid); err != nil {
		p.Err = err.Error()
	}
	if p.cpuTime, err = procstat.CPU(pid); err != nil && p.Err == "" {
		p.Err = err.Error()
	}
	return p
}
