// Package keyed gives llmload's requests beside the load (discovery,
// /tokenize, /metrics) the API key and extra headers of the load's
// client, sent to the load's origin and to no other.
package keyed

import (
	"net/http"
	"slices"

	"github.com/llmload/llmload/internal/origin"
	"github.com/llmload/llmload/loadgen"
)

// bearer adds an API key and the client's extra headers (a gateway's
// routing or credential headers, -header) to the requests sent to the
// origin it was given for, and to no other: a redirect to another scheme,
// host or port gets neither (net/http's client keeps a header it was given
// on a redirect to the same host on another port; this does not).
type bearer struct {
	key    string
	header http.Header
	origin string
	next   http.RoundTripper
}

// Client returns a client that sends the key and the extra headers of c
// to baseURL's origin only: llmload's own requests beside the load
// (discovery, /tokenize, /metrics) reach a gateway as the load does. A
// client that already does is returned as it is; nil hc means
// http.DefaultClient.
func Client(hc *http.Client, c *loadgen.Client, baseURL string) *http.Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	if c.APIKey == "" && len(c.Header) == 0 {
		return hc
	}
	if b, ok := hc.Transport.(bearer); ok && b.key == c.APIKey && sameHeader(b.header, c.Header) {
		return hc
	}
	out := *hc
	out.Transport = bearer{key: c.APIKey, header: c.Header.Clone(), origin: origin.Parse(baseURL), next: transport(hc)}
	return &out
}

func sameHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, vs := range a {
		if !slices.Equal(vs, b[k]) {
			return false
		}
	}
	return true
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.origin == "" || origin.Of(req.URL) != b.origin {
		return b.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, vs := range b.header {
		if req.Header.Get(k) == "" {
			req.Header[k] = slices.Clone(vs)
		}
	}
	if b.key != "" {
		req.Header.Set("Authorization", "Bearer "+b.key)
	}
	return b.next.RoundTrip(req)
}

func transport(hc *http.Client) http.RoundTripper {
	if hc.Transport != nil {
		return hc.Transport
	}
	return http.DefaultTransport
}
