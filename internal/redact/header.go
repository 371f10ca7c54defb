package redact

import (
	"net/http"
	"strings"
)

// CredentialHeader reports whether a header named name looks like it
// carries a credential: Authorization, Proxy-Authorization, or any name
// holding "key", "token", "secret", "password" or "cookie". Such a header
// is treated as the API key is: sent to its origin only, never printed or
// saved.
func CredentialHeader(name string) bool {
	n := strings.ToLower(name)
	if n == "authorization" || n == "proxy-authorization" {
		return true
	}
	for _, w := range []string{"key", "token", "secret", "password", "cookie", "auth"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// HeaderSecrets returns the values of h's credential headers (see
// [CredentialHeader]), and of an Authorization header their part after
// the scheme ("Bearer sk-…" gives both), for [New].
func HeaderSecrets(h http.Header) []string {
	var out []string
	for name, vs := range h {
		if !CredentialHeader(name) {
			continue
		}
		for _, v := range vs {
			out = append(out, v)
			if _, cred, ok := strings.Cut(v, " "); ok && strings.TrimSpace(cred) != "" {
				out = append(out, strings.TrimSpace(cred))
			}
		}
	}
	return out
}
