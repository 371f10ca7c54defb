package matrix

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// textDuration is a duration as the JSON documents hold it: text, as
// time.Duration.String writes and time.ParseDuration reads ("30s").
type textDuration time.Duration

func (d textDuration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *textDuration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("matrix: %w", err)
	}
	*d = textDuration(v)
	return nil
}

// specJSON is a [Spec] as its JSON document holds it, field for field in
// the same order, with its durations as text.
type specJSON struct {
	URL            string           `json:"url"`
	Model          string           `json:"model,omitempty"`
	API            loadgen.API      `json:"api"`
	Contexts       []int            `json:"contexts"`
	Concurrency    []int            `json:"concurrency"`
	Prefill        []int            `json:"prefill"`
	PrefillRepeat  int              `json:"prefill_repeat,omitempty"`
	Duration       textDuration     `json:"duration"`
	MaxTokens      int              `json:"max_tokens"`
	Series         textDuration     `json:"series,omitempty"`
	WarmupRule     *warmupRuleJSON  `json:"warmup,omitempty"`
	SLO            *metrics.SLO     `json:"slo,omitempty"`
	ErrorThreshold float64          `json:"error_threshold,omitempty"`
	Limits         *capacity.Limits `json:"limits,omitempty"`
	Images         []string         `json:"images,omitempty"`
	ImageFormat    string           `json:"image_format,omitempty"`
	SkipQueued     bool             `json:"skip_queued,omitempty"`
}

// warmupRuleJSON is a [WarmupRule] as a spec's JSON document holds it.
type warmupRuleJSON struct {
	Min         textDuration `json:"min"`
	Flow        textDuration `json:"flow"`
	Timeout     textDuration `json:"timeout"`
	PerContextK textDuration `json:"per_context_k"`
}

// MarshalJSON writes the spec with its durations as text ("30s").
func (s Spec) MarshalJSON() ([]byte, error) {
	j := specJSON{
		URL: s.URL, Model: s.Model, API: s.API,
		Contexts: s.Contexts, Concurrency: s.Concurrency, Prefill: s.Prefill, PrefillRepeat: s.PrefillRepeat,
		Duration: textDuration(s.Duration), MaxTokens: s.MaxTokens, Series: textDuration(s.Series),
		SLO: s.SLO, ErrorThreshold: s.ErrorThreshold, Limits: s.Limits,
		Images: s.Images, ImageFormat: s.ImageFormat, SkipQueued: s.SkipQueued,
	}
	if w := s.WarmupRule; w != nil {
		j.WarmupRule = &warmupRuleJSON{textDuration(w.Min), textDuration(w.Flow), textDuration(w.Timeout), textDuration(w.PerContextK)}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes: durations as text.
func (s *Spec) UnmarshalJSON(b []byte) error {
	var j specJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Spec{
		URL: j.URL, Model: j.Model, API: j.API,
		Contexts: j.Contexts, Concurrency: j.Concurrency, Prefill: j.Prefill, PrefillRepeat: j.PrefillRepeat,
		Duration: time.Duration(j.Duration), MaxTokens: j.MaxTokens, Series: time.Duration(j.Series),
		SLO: j.SLO, ErrorThreshold: j.ErrorThreshold, Limits: j.Limits,
		Images: j.Images, ImageFormat: j.ImageFormat, SkipQueued: j.SkipQueued,
	}
	if w := j.WarmupRule; w != nil {
		s.WarmupRule = &WarmupRule{time.Duration(w.Min), time.Duration(w.Flow), time.Duration(w.Timeout), time.Duration(w.PerContextK)}
	}
	return nil
}
