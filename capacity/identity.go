package capacity

import (
	"fmt"
	"github.com/llmload/llmload/internal/enginelabel"
	"strings"
)

// Server names the server a run measured, as matrix's and sweep's results
// record it: where it was, what it served, which engine and version
// answered, and what it could hold.
type Server struct {
	// URL is the server's address, with any secret in it redacted.
	URL string `json:"url"`
	// Model is the model the requests named ("a,b" when they named
	// several).
	Model string `json:"model,omitempty"`
	// Engine is the engine that answered ([Discover]), or EngineUnknown;
	// Version the engine's version where it tells it.
	Engine  Engine `json:"engine,omitempty"`
	Version string `json:"version,omitempty"`
	// Simulated marks llmload's simulator.
	Simulated bool `json:"simulated,omitempty"`
	// Speed is the simulator's speed factor: it ran Speed times faster
	// than the server it simulates. Every figure of the results is in wall
	// time; the reports speak in the simulated server's own time,
	// durations × Speed and rates ÷ Speed. 0 means 1.
	Speed float64 `json:"speed,omitempty"`
	// Profile names the simulator's profile (see loadgentest.ProfileByName).
	Profile string `json:"profile,omitempty"`
	// Limits are what the server published, completed by what the run
	// was told (a matrix plans its cells with them); unknown ones are
	// zero.
	Limits Limits `json:"limits"`
	// Notes say what to keep in mind when reading the results.
	Notes []string `json:"notes,omitempty"`
}

// engineVersion names an engine and its version as every report does
// ("vllm 0.10.1").
func engineVersion(e Engine, version string) string { return enginelabel.Of(string(e), version) }

// String names the server for a report's first line: its URL, then its
// model, engine and version where known ("http://gpu:8000/v1 (m, vllm
// 0.10.1)"), or llmload's simulator with its profile and speed.
func (s Server) String() string {
	if s.Simulated {
		speed := s.Speed
		if speed == 0 {
			speed = 1
		}
		return fmt.Sprintf("llmload's simulated server (profile %q, %g× speed)", s.Profile, speed)
	}
	var about []string
	if s.Model != "" {
		about = append(about, s.Model)
	}
	if s.Engine != EngineUnknown {
		about = append(about, engineVersion(s.Engine, s.Version))
	}
	if len(about) == 0 {
		return s.URL
	}
	return s.URL + " (" + strings.Join(about, ", ") + ")"
}
