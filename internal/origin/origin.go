// Package origin says what origin a URL is of, the one rule by which
// llmload keeps a credential with the server it was given for: scheme,
// host and port, case aside, the port made explicit for http (80) and
// https (443) and left empty for any other scheme, whose default llmload
// does not know.
package origin

import (
	"net/url"
	"strings"
)

// Of returns u's origin, "scheme://host:port".
func Of(u *url.URL) string {
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

// Parse returns the origin of the URL raw, or "" when it does not parse
// or has no scheme or host: an origin no request matches.
func Parse(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return Of(u)
}

// Same reports whether a and b are of one origin.
func Same(a, b *url.URL) bool { return Of(a) == Of(b) }
