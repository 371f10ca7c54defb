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
	// MaxContext caps a session's history, in tokens, with the next
	// turn's input and output: a turn that would pass it starts a new
	// session instead, so a history never grows
	// beyond what a server of that context could take. 0 means 1,048,576
	// tokens; give the server's max_model_len where it is known.
	MaxContext int

	mu        sync.Mutex
	workers   map[int]*session
	started   int
	restarted int
}

// defaultMaxContext is a session's cap when MaxContext is 0: more than any
// server's context today.
const defaultMaxContext = 1 << 20

// maxTurns bounds the mean of a session's turns.
const maxTurns = 10_000

// session is one conversation in progress.
type session struct {
	id, turns, turn int
	rng             *rand.Rand
	history         []loadgen.Message
	lastOut         int // the last turn's output length
	tokens          int // the history's tokens, the last reply's included
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
	if s.Turns != nil && s.Turns.Mean() > maxTurns {
		errs = append(errs, fmt.Sprintf("Turns averages %.0f, more than %d", s.Turns.Mean(), maxTurns))
	}
	if s.MaxContext < 0 {
		errs = append(errs, fmt.Sprintf("MaxContext %d cannot be negative", s.MaxContext))
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
	if ss != nil && ss.turn < ss.turns && ss.tokens+s.turnTokens(ss) > s.maxContext() {
		// The history has grown as far as the server's context allows.
		ss = nil
		s.restarted++
	}
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
		writeWords(&b, s.Sizing.words(reply), ss.rng)
		ss.history = append(ss.history, loadgen.Message{Role: "assistant", Content: b.String()})
	}
	in := s.Input.Draw(ss.rng)
	out := 0
	if s.Output != nil {
		out = s.Output.Draw(ss.rng)
	}
	var b strings.Builder
	writeWords(&b, s.Sizing.words(in), ss.rng)
	ss.history = append(ss.history, loadgen.Message{Role: "user", Content: b.String()})
	ss.lastOut = out
	if out == 0 {
		ss.lastOut = in
	}
	ss.turn++
	msgs := slices.Clip(ss.history) // a later append makes a new array
	tokens := s.Sizing.overhead(len(msgs))
	for _, m := range msgs {
		tokens += s.Sizing.tokens(len(strings.Fields(m.Content)))
	}
	ss.tokens = tokens + ss.lastOut
	return Item{Messages: msgs, InputTokens: tokens, OutputTokens: out}
}

// turnTokens is what the next turn of ss adds to its history at most: the
// last reply, the next input and its output, as the lengths' means allow
// (a draw above them is caught by the server's own limit).
func (s *Sessions) turnTokens(ss *session) int {
	n := s.Input.Mean()
	if s.Output != nil {
		n += s.Output.Mean()
	} else {
		n += s.Input.Mean()
	}
	return int(n) + s.Sizing.overhead(2)
}

func (s *Sessions) maxContext() int {
	if s.MaxContext > 0 {
		return s.MaxContext
	}
	return defaultMaxContext
}

// restartedCount returns how many sessions were started again before their
// last turn because their history had reached MaxContext.
func (s *Sessions) restartedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarted
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
