package matrix

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/llmload/llmload/internal/redact"
)

// bearer adds an API key to the requests sent to the origin it was given
// for, and to no other: a redirect to another scheme, host or port gets
// no key (net/http's client keeps a header it was given on a redirect to
// the same host on another port; this does not).
type bearer struct {
	key    string
	origin string
	next   http.RoundTripper
}

// withKey returns a client that sends key to baseURL's origin only. A
// client that already does is returned as it is.
func withKey(hc *http.Client, key, baseURL string) *http.Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	if key == "" {
		return hc
	}
	if b, ok := hc.Transport.(bearer); ok && b.key == key {
		return hc
	}
	c := *hc
	c.Transport = bearer{key: key, origin: originOf(baseURL), next: transport(hc)}
	return &c
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.origin == "" || urlOrigin(req.URL) != b.origin {
		return b.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(req)
}

func transport(hc *http.Client) http.RoundTripper {
	if hc.Transport != nil {
		return hc.Transport
	}
	return http.DefaultTransport
}

// originOf is the origin of a URL, "scheme://host:port", or "" when it
// does not parse.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return urlOrigin(u)
}

// urlOrigin is u's scheme, host and port, the port made explicit.
func urlOrigin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

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
