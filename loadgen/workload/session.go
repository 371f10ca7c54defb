package workload

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmload/llmload/loadgen"
)

// Sessions makes multi-turn conversations for a closed loop: each worker
// holds one session at a time and sends its turns one after another, each
// with the whole history before it — the user's earlier turns and the
// assistant's replies — so the prompt grows turn by turn, as a chat's
// does, and a prefix cache finds the history of the turn before. Between
// a reply and the next turn the worker thinks for Think ([Sessions.Pause]).
//
// The assistant's earlier replies in the history are text of the lengths
// asked for, not the server's own words, which the client does not keep:
// a server that generates each turn's output in full (ignore_eos) sees
// the same token counts.
type Sessions struct {
	// Turns is the turns of each session; required.
	Turns Length
	// Input is each turn's new user text, in tokens; required. Output is
	// each reply's length; nil leaves it to the server (and the history
	// holds replies of Input's length).
	Input, Output Length
	// Think is the pause between the end of a reply and the next turn.
	Think time.Duration
	// Sizing converts lengths to words.
	Sizing Sizing
	// Seed makes the text and the lengths; 0 means a fresh one, stored
	// here as the first session starts.
	Seed uint64
	// Builder makes the requests; set IgnoreEOS for replies of exactly
	// Output's lengths.
	Builder Builder

	mu      sync.Mutex
	workers map[int]*session
	started int
}

// session is one conversation in progress.
type session struct {
	id, turns, turn int
	rng             *rand.Rand
	history         []loadgen.Message
	lastOut         int // the last turn's output length
}

// Validate reports Sessions that cannot make requests.
func (s *Sessions) Validate() error {
	var errs []string
	if s.Turns == nil || s.Turns.Mean() < 1 {
		errs = append(errs, "Turns must be a Length of 1 or more")
	}
	if s.Input == nil || s.Input.Mean() < 1 {
		errs = append(errs, "Input must be a Length of 1 or more")
	}
	if s.Think < 0 {
		errs = append(errs, fmt.Sprintf("Think %v cannot be negative", s.Think))
	}
	if len(errs) > 0 {
		return fmt.Errorf("workload: Sessions.%s", strings.Join(errs, "; "))
	}
	return nil
}

// Source returns the next turn of worker's session, starting a new session
// when it has none or its last ended. It is a [loadgen.Source] for a
// closed loop, safe for concurrent use.
func (s *Sessions) Source(worker, _ int) *loadgen.Request {
	return s.Builder.Request(s.next(worker))
}

func (s *Sessions) next(worker int) Item {
	s.mu.Lock()
	if s.workers == nil {
		s.workers = map[int]*session{}
	}
	if s.Seed == 0 {
		s.Seed = freshSeed()
	}
	ss := s.workers[worker]
	if ss == nil || ss.turn >= ss.turns {
		ss = &session{id: s.started, rng: newRand(s.Seed^0x5e55, uint64(s.started))}
		ss.turns = max(s.Turns.Draw(ss.rng), 1)
		s.workers[worker] = ss
		s.started++
	}
	s.mu.Unlock()

	// The session is the worker's alone from here.
	if ss.turn > 0 {
		reply := ss.lastOut
		var b strings.Builder
		writeWords(&b, s.Sizing.Words(reply), ss.rng)
		ss.history = append(ss.history, loadgen.Message{Role: "assistant", Content: b.String()})
	}
	in := s.Input.Draw(ss.rng)
	out := 0
	if s.Output != nil {
		out = s.Output.Draw(ss.rng)
	}
	var b strings.Builder
	writeWords(&b, s.Sizing.Words(in), ss.rng)
	ss.history = append(ss.history, loadgen.Message{Role: "user", Content: b.String()})
	ss.lastOut = out
	if out == 0 {
		ss.lastOut = in
	}
	ss.turn++
	msgs := slices.Clip(ss.history) // a later append makes a new array
	tokens := s.Sizing.Overhead(len(msgs))
	for _, m := range msgs {
		tokens += s.Sizing.Tokens(len(strings.Fields(m.Content)))
	}
	return Item{Messages: msgs, InputTokens: tokens, OutputTokens: out}
}

// Pause returns how long worker waits before its request seq: Think
// between the turns of a session, nothing before a session's first. Give
// it to a closed loop as its Pause: loadgen.Closed{Pause: s.Pause}.
func (s *Sessions) Pause(worker, _ int) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.workers[worker]
	if ss == nil || ss.turn >= ss.turns {
		return 0
	}
	return s.Think
}

// startedCount returns how many sessions have started.
func (s *Sessions) startedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}
