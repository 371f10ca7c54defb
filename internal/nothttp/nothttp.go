// Package nothttp recognizes the failure of a request whose peer did not
// answer in HTTP (an SSH or a database server on the port given), as
// net/http's transport and loadgen's StreamTransport report it, so that the
// load client and the matrix's own requests say it alike.
package nothttp

import (
	"strconv"
	"strings"

	"github.com/llmload/llmload/internal/textsafe"
)

// Quote is how much of what the peer sent [Parse] returns, in bytes, and of
// any body loadgen quotes in an error.
const Quote = 64

// Parse returns, for the error of a request whose peer's answer was not
// HTTP — a malformed response, status code or version — what was
// malformed ("malformed HTTP response" and the like) and the start of what
// the peer sent (see [textsafe.Start], at most Quote bytes). ok is false
// for any other error, and for nil.
func Parse(err error) (what, sent string, ok bool) {
	if err == nil {
		return "", "", false
	}
	msg := err.Error()
	for _, what := range []string{"malformed HTTP response ", "malformed HTTP status code ", "malformed HTTP version "} {
		i := strings.Index(msg, what)
		if i < 0 {
			continue
		}
		sent := msg[i+len(what):]
		if q, err := strconv.QuotedPrefix(sent); err == nil {
			sent, _ = strconv.Unquote(q)
		}
		return strings.TrimSpace(what), textsafe.Start([]byte(sent), Quote), true
	}
	return "", "", false
}
