package matrix

import (
	"github.com/llmload/llmload/internal/redact"
)

// scrub removes credentials from every string of r that may hold text
// from an error or the server, so that nothing saved or rendered carries
// them.
func scrub(r *Results, sec *redact.Redactor) {
	if sec == nil {
		return
	}
	r.Spec.URL = redact.URL(sec.Redact(r.Spec.URL))
	r.Server.URL = redact.URL(sec.Redact(r.Server.URL))
	r.Server.Limits.Source = sec.Redact(r.Server.Limits.Source)
	for i, n := range r.Server.Notes {
		r.Server.Notes[i] = sec.Redact(n)
	}
	for i := range r.Prefill {
		r.Prefill[i].Error = sec.Redact(r.Prefill[i].Error)
	}
	for i := range r.Cells {
		c := &r.Cells[i]
		c.Reason = sec.Redact(c.Reason)
		c.Predicted.Detail = sec.Redact(c.Predicted.Detail)
		if c.Measurement != nil {
			c.Measurement.Client.Reason = sec.Redact(c.Measurement.Client.Reason)
		}
	}
}
