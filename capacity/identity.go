package capacity

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
	// Limits are the capacity limits the run planned with; unknown ones
	// are zero.
	Limits Limits `json:"limits"`
	// Notes say what to keep in mind when reading the results.
	Notes []string `json:"notes,omitempty"`
}
