package metrics

// Energy is what the GPUs serving a window drew, as their DCGM exporter
// reported it, and what each output token cost. Seconds and MeanWatts
// are in wall time, as every figure is recorded.
type Energy struct {
	// GPUs is how many GPUs were read (over every exporter), Samples how
	// many readings the window holds.
	GPUs    int `json:"gpus"`
	Samples int `json:"samples"`
	// Joules is the energy the GPUs drew over Seconds, the window: the
	// difference of their energy counters, or, where a GPU has none
	// (Integrated), its power samples integrated over time. Resets counts
	// the counters found reset (a driver reload), each counted from zero.
	Joules     float64 `json:"joules"`
	Seconds    float64 `json:"seconds"`
	Integrated bool    `json:"integrated,omitempty"`
	Resets     int     `json:"resets,omitempty"`
	// MeanWatts is Joules ÷ Seconds.
	MeanWatts float64 `json:"mean_watts"`
	// OutputTokens are the window's; TokensPerJoule and JoulesPerToken
	// relate them to Joules.
	OutputTokens   int     `json:"output_tokens"`
	TokensPerJoule float64 `json:"tokens_per_joule"`
	JoulesPerToken float64 `json:"joules_per_token"`
	// Utilization is the GPUs' mean utilization in the window, in percent;
	// MemoryMiB the most framebuffer memory they held at once, in MiB.
	Utilization float64 `json:"utilization_pct"`
	MemoryMiB   float64 `json:"memory_mib,omitempty"`
	// HourlyCost is the price of one GPU for an hour, as given, and
	// DollarsPerMillionTokens what a million output tokens cost at it:
	// GPUs × HourlyCost × the window's hours ÷ OutputTokens × 10⁶.
	HourlyCost              float64 `json:"gpu_hourly_cost,omitempty"`
	DollarsPerMillionTokens float64 `json:"usd_per_million_tokens,omitempty"`
	// Dropped counts the GPUs' readings left out of every figure: not
	// finite (NaN, ±Inf) or implausible (a power below 0 or above what a
	// GPU draws). Notes say what was dropped or left out, and why: such
	// a reading, a GPU whose window adds up to an implausible power, a
	// figure that came out too large to be a number.
	Dropped int      `json:"dropped_readings,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}
