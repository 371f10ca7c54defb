package loadgen

import (
	"errors"
	"fmt"
	"math"
	"net/url"

	"github.com/llmload/llmload/internal/errlist"
)

// A ConfigError is a setting of a [Generator], its [Client], its load
// ([Closed], [Open], [Schedule]) or a [Request] that cannot work, found
// before anything is sent: which field, and why. Where several fields are
// wrong, the error holds one ConfigError for each (errors.As finds the
// first; its message lists them all).
type ConfigError struct {
	// Field names the setting as its type and field, such as
	// "Closed.Streams" (the concurrency of a closed load),
	// "Generator.Duration" or "Client.HTTPClient.Timeout".
	Field string
	// Reason says what is wrong with it and what to do.
	Reason string
}

// Error names the field and says why it cannot work.
func (e *ConfigError) Error() string {
	return "loadgen: " + e.Field + " " + e.Reason
}

// configErrors collects the ConfigErrors of one check.
type configErrors struct{ errlist.List }

func (errs *configErrors) add(field, format string, args ...any) {
	errs.Add(&ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)})
}

// join adds the errors err holds, if any.
func (errs *configErrors) join(err error) { errs.Add(err) }

// err returns nil, the one error, or all of them as one error.
func (errs configErrors) err() error { return errs.Err() }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Validate reports the settings of g that cannot work, its Client's
// included, as [*ConfigError]s. [Generator.Run] refuses such a Generator
// before it sends anything.
func (g *Generator) Validate() error {
	var errs configErrors
	bad := func(field, format string, args ...any) { errs.add("Generator."+field, format, args...) }
	if g.Client == nil {
		bad("Client", "is nil: set a *Client for the server")
	} else {
		errs.join(g.Client.Validate())
	}
	if g.Source == nil {
		bad("Source", "is nil: set one, such as Repeat(req)")
	}
	_, schedule := g.Load.(Schedule)
	errs.join(g.loadOf().Validate())
	for _, d := range []struct {
		field string
		v     any
		neg   bool
	}{
		{"Warmup", g.Warmup, g.Warmup < 0}, {"WarmupTimeout", g.WarmupTimeout, g.WarmupTimeout < 0},
		{"Duration", g.Duration, g.Duration < 0}, {"Requests", g.Requests, g.Requests < 0},
		{"DrainTimeout", g.DrainTimeout, g.DrainTimeout < 0}, {"Retries", g.Retries, g.Retries < 0},
	} {
		if d.neg {
			bad(d.field, "is %v: it cannot be negative", d.v)
		}
	}
	if g.Duration == 0 && g.Requests == 0 && !schedule {
		bad("Duration", "and Generator.Requests are both 0: set the window's length, or how many requests to send (or a Schedule load, whose arrivals end)")
	}
	if g.WarmupTimeout != 0 && g.WarmupUntil == nil {
		bad("WarmupTimeout", "is %v without WarmupUntil: it bounds the wait for WarmupUntil; without it the window opens after Warmup", g.WarmupTimeout)
	}
	if g.DrainTimeout != 0 && !g.Drain {
		bad("DrainTimeout", "is %v without Drain: it bounds the wait for the requests in flight when Drain is set", g.DrainTimeout)
	}
	if g.Drain && g.Duration <= 0 {
		bad("Drain", "is set without a Duration: it lets requests finish after a window of Duration; a run of Requests waits for them all anyway")
	}
	if rec := g.Recorder; rec != nil {
		if snap := rec.Snapshot(); snap.Recorded > 0 || snap.Tokens > 0 || !rec.Window().IsZero() {
			bad("Recorder", "already holds a recording (%d requests): its window and counts would mix with this run's; give every run a new Recorder", snap.Recorded)
		}
	}
	return errs.err()
}

// Validate reports the settings of c that cannot work as [*ConfigError]s:
// a BaseURL that is not an http or https URL, an HTTPClient with a Timeout
// (which would cut every stream longer than it), a negative MaxEventSize,
// MaxBodySize or MaxBodyInFlight. A Client checks itself before its first request and
// refuses every request while one stands.
func (c *Client) Validate() error {
	if c == nil {
		return &ConfigError{Field: "Client", Reason: "is nil"}
	}
	var errs configErrors
	_, err := parseBaseURL(c.BaseURL)
	errs.join(err)
	if c.HTTPClient != nil && c.HTTPClient.Timeout != 0 {
		errs.add("Client.HTTPClient.Timeout", "is %v: it would cut every stream longer than that, mid-stream, whatever the server does; set it to 0 and bound each phase with the Client's ConnectTimeout, HeaderTimeout, FirstTokenTimeout and StallTimeout", c.HTTPClient.Timeout)
	}
	if c.MaxEventSize < 0 {
		errs.add("Client.MaxEventSize", "is %d: set a size in bytes, or 0 for 1 MiB", c.MaxEventSize)
	}
	if c.MaxBodySize < 0 {
		errs.add("Client.MaxBodySize", "is %d: set a size in bytes, or 0 for 64 MiB", c.MaxBodySize)
	}
	if c.MaxBodyInFlight < 0 {
		errs.add("Client.MaxBodyInFlight", "is %d: set a size in bytes, or 0 for 256 MiB", c.MaxBodyInFlight)
	}
	return errs.err()
}

// parseBaseURL checks a Client's BaseURL.
func parseBaseURL(base string) (*url.URL, error) {
	const field = "Client.BaseURL"
	if base == "" {
		return nil, &ConfigError{Field: field, Reason: "is empty: set the API root, such as http://127.0.0.1:8000/v1"}
	}
	u, err := url.Parse(base)
	if err != nil {
		reason := err.Error()
		var ue *url.Error
		if errors.As(err, &ue) {
			reason = ue.Err.Error() // without the URL, which may hold a password
		}
		return nil, &ConfigError{Field: field, Reason: fmt.Sprintf("is not a URL (%s): set the API root, such as http://127.0.0.1:8000/v1", reason)}
	}
	shown := u.Redacted()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, &ConfigError{Field: field, Reason: fmt.Sprintf("%q is not an http or https URL: set the API root, such as http://127.0.0.1:8000/v1", shown)}
	case u.Host == "":
		return nil, &ConfigError{Field: field, Reason: fmt.Sprintf("%q has no host", shown)}
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, &ConfigError{Field: field, Reason: fmt.Sprintf("%q has a query or a fragment: requests append /chat/completions or /completions to it; set the API root alone", shown)}
	}
	return u, nil
}

// Validate reports the settings of r that cannot work as [*ConfigError]s:
// an unknown API or Usage, negative token counts, MinTokens above
// MaxTokens, text that would not be sent (Messages on the Completions API,
// a Prompt beside Messages), a Temperature that is not a number.
func (r *Request) Validate() error {
	if r == nil {
		return &ConfigError{Field: "Request", Reason: "is nil"}
	}
	var errs configErrors
	if r.API > Rerank {
		errs.add("Request.API", "is %v: use Chat, Completions, Responses, Messages, Embeddings or Rerank", r.API)
	}
	if r.API.pooled() {
		r.validatePooled(&errs)
		if len(r.Images) > 0 {
			errs.add("Request.Images", "are set on a %v request, which sends text alone: use Chat, Responses or Messages", r.API)
		}
		return errs.err()
	}
	if len(r.Documents) > 0 {
		errs.add("Request.Documents", "are set, and %v requests do not send them: they are the inputs of Embeddings and Rerank", r.API)
	}
	if r.API == Messages && r.MaxTokens == 0 {
		errs.add("Request.MaxTokens", "is 0, and the Messages API requires max_tokens: set 1 or more")
	}
	if r.Usage > UsageNone {
		errs.add("Request.Usage", "is %d: use UsageContinuous, UsageFinal or UsageNone", r.Usage)
	}
	if r.MaxTokens < 0 {
		errs.add("Request.MaxTokens", "is %d: set 1 or more, or 0 to leave it to the server", r.MaxTokens)
	}
	if r.MinTokens < 0 {
		errs.add("Request.MinTokens", "is %d: set 1 or more, or 0 for none", r.MinTokens)
	}
	if r.MaxTokens > 0 && r.MinTokens > r.MaxTokens {
		errs.add("Request.MinTokens", "is %d, above MaxTokens %d", r.MinTokens, r.MaxTokens)
	}
	if r.API == Completions && len(r.Messages) > 0 {
		errs.add("Request.Messages", "are set on a Completions request, which sends only Prompt: put the text in Prompt, or use Chat")
	}
	if r.API != Completions && len(r.Messages) > 0 && r.Prompt != "" {
		errs.add("Request.Prompt", "is set beside Messages, and a %v request with Messages sends them alone: put the prompt in a message", r.API)
	}
	if len(r.Images) > 0 {
		user := len(r.Messages) == 0
		for _, m := range r.Messages {
			user = user || m.Role == "user"
		}
		switch {
		case r.API != Chat && r.API != Responses && r.API != Messages:
			errs.add("Request.Images", "are set on a %v request, which sends text alone: use Chat, Responses or Messages", r.API)
		case !user:
			errs.add("Request.Images", "go in the last user message, and Messages has none: add one")
		}
		for i, u := range r.Images {
			if why := checkImage(u); why != "" {
				errs.add(fmt.Sprintf("Request.Images[%d]", i), "%s", why)
				break
			}
		}
	}
	if r.Temperature != nil && !finite(*r.Temperature) {
		errs.add("Request.Temperature", "is %v: JSON has no such number", *r.Temperature)
	}
	return errs.err()
}

// validatePooled checks an Embeddings or Rerank request: it has inputs,
// and none of the settings of a generation.
func (r *Request) validatePooled(errs *configErrors) {
	switch {
	case r.API == Rerank && r.Prompt == "":
		errs.add("Request.Prompt", "is empty: a Rerank request's Prompt is its query")
	case r.API == Rerank && len(r.Documents) == 0:
		errs.add("Request.Documents", "are empty: a Rerank request ranks Documents against its Prompt")
	case r.API == Embeddings && r.Prompt != "" && len(r.Documents) > 0:
		errs.add("Request.Prompt", "is set beside Documents, and an Embeddings request sends one or the other: put the text in Documents")
	case r.API == Embeddings && r.Prompt == "" && len(r.Documents) == 0:
		errs.add("Request.Documents", "are empty, and so is Prompt: an Embeddings request needs an input")
	}
	if len(r.Messages) > 0 {
		errs.add("Request.Messages", "are set, and %v requests do not send them: use Prompt or Documents", r.API)
	}
	if r.MaxTokens != 0 || r.MinTokens != 0 || r.IgnoreEOS || r.Temperature != nil {
		errs.add("Request.MaxTokens", "or MinTokens, IgnoreEOS or Temperature is set, and %v requests generate nothing: leave them unset", r.API)
	}
}
