package cli

import (
	"flag"
	"fmt"

	"github.com/llmload/llmload/loadgen/loadgentest"
)

// SimFlags are the flags of the simulated server a command runs when it
// is given no -url: its speed factor, its profile and its reasoning
// tokens.
type SimFlags struct {
	Speed     float64
	Profile   string
	Reasoning int
	// Adapters are more model names the simulator serves (see
	// loadgentest.Profile.Adapters), the profile's own left out.
	Adapters []string
}

// maxSpeed bounds -speed: beyond it the simulator's schedule is shorter
// than the machine's timer resolution.
const maxSpeed = 1000

// Register defines -speed, with speed its default, -sim-reasoning, and
// the profile's flag, named profileFlag.
func (f *SimFlags) Register(fs *flag.FlagSet, profileFlag string, speed float64) {
	fs.Float64Var(&f.Speed, "speed", speed, "the simulator's speed factor (only without -url)")
	fs.StringVar(&f.Profile, profileFlag, "seed", "the simulator's profile, seed or fast (only without -url)")
	fs.IntVar(&f.Reasoning, "sim-reasoning", 0, "the simulator's reasoning tokens before each answer, as a reasoning model's (only without -url)")
}

// Check refuses a speed or a count of reasoning tokens the simulator
// cannot run.
func (f *SimFlags) Check() error {
	if !(f.Speed > 0 && f.Speed <= maxSpeed) {
		return fmt.Errorf("-speed %g: the simulator's speed factor must be above 0 and at most %d", f.Speed, maxSpeed)
	}
	if f.Reasoning < 0 {
		return fmt.Errorf("-sim-reasoning holds %d, below 0", f.Reasoning)
	}
	return nil
}

// Start starts the simulated server the flags describe; the caller
// closes it.
func (f *SimFlags) Start() (*loadgentest.Server, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	p, err := loadgentest.ProfileByName(f.Profile)
	if err != nil {
		return nil, err
	}
	p.Speed, p.TruthBytes, p.ReasoningTokens = f.Speed, -1, f.Reasoning
	for _, a := range f.Adapters {
		if a != p.Model {
			p.Adapters = append(p.Adapters, a)
		}
	}
	return loadgentest.NewServer(p), nil
}
