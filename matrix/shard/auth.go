package shard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/llmload/llmload/internal/bounded"
	"github.com/llmload/llmload/matrix/internal/fleet"
)

// Every request of the protocol, and every answer to one, is signed with
// the run's token: an HMAC-SHA256 over the protocol's version, the method,
// the path, the time it was sent, a nonce, the leader's run and the
// SHA-256 of the body. The leader checks a request's signature, its time,
// its run and its nonce before it reads a byte of the body, and the body
// against its digest after; a follower checks an answer's signature
// before it reads the answer.
//
// The run is a random id each Leader makes for itself, which a follower
// learns from its hello (the one request signed without a run) and signs
// into every request after: a request recorded from one run and replayed
// to a later leader of the same token, within its time, is refused, as
// the nonce refuses it replayed to its own.
const (
	headerTime      = "Llmload-Fleet-Time"
	headerNonce     = "Llmload-Fleet-Nonce"
	headerRun       = "Llmload-Fleet-Run"
	headerBody      = "Llmload-Fleet-Body"
	headerSignature = "Llmload-Fleet-Signature"
)

// MinTokenLen is the shortest token a fleet accepts: 16 bytes, 128 bits
// if they are random. [NewToken] makes one of 32.
const MinTokenLen = 16

// errToken is wrapped by the errors of a token that is missing or too
// short, and of a request or an answer whose signature is not the
// fleet's.
var errToken = errors.New("shard: the fleet's token")

// NewToken returns a new random token for a fleet: 32 bytes, base64
// without padding (43 characters).
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

func checkToken(token string) error {
	if len(token) < MinTokenLen {
		return fmt.Errorf("%w is %d bytes; give every shard the same one of at least %d (shard.NewToken makes one)", errToken, len(token), MinTokenLen)
	}
	return nil
}

func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// signature is the HMAC of a message's fields under token.
func signature(token, method, path, at, nonce, run, body string) string {
	m := hmac.New(sha256.New, []byte(token))
	for _, s := range []string{version, method, path, at, nonce, run, body} {
		io.WriteString(m, s)
		m.Write([]byte{'\n'})
	}
	return hex.EncodeToString(m.Sum(nil))
}

func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// signRequest signs a request of body to the leader's run ("" for a
// hello).
func signRequest(req *http.Request, token, run string, body []byte) {
	at, nonce, d := strconv.FormatInt(time.Now().UnixNano(), 10), newNonce(), digest(body)
	req.Header.Set(headerTime, at)
	req.Header.Set(headerNonce, nonce)
	req.Header.Del(headerRun)
	if run != "" {
		req.Header.Set(headerRun, run)
	}
	req.Header.Set(headerBody, d)
	req.Header.Set(headerSignature, signature(token, req.Method, req.URL.Path, at, nonce, run, d))
}

// signResponse signs the answer of body to the request whose nonce is
// nonce: an answer is valid for its request alone.
func signResponse(h http.Header, token, path, nonce string, body []byte) {
	d := digest(body)
	h.Set(headerBody, d)
	h.Set(headerSignature, signature(token, "ANSWER", path, "", nonce, "", d))
}

// checkResponse checks that an answer is signed with the token for the
// request of nonce, before its body is read, and returns the digest the
// body must have.
func checkResponse(resp *http.Response, token, path, nonce string) (string, error) {
	d := resp.Header.Get(headerBody)
	want := signature(token, "ANSWER", path, "", nonce, "", d)
	if !hmac.Equal([]byte(want), []byte(resp.Header.Get(headerSignature))) {
		return "", fmt.Errorf("%w: %s: the answer (%d) is not signed with the fleet's token: the leader was given another token, or is not llmload's", errToken, path, resp.StatusCode)
	}
	return d, nil
}

// readChecked reads at most limit bytes of r and checks them against the
// digest d.
func readChecked(r io.Reader, limit int64, d string) ([]byte, error) {
	b, whole, err := bounded.Read(r, limit)
	switch {
	case err != nil:
		return nil, err
	case !whole:
		return nil, fmt.Errorf("more than %d bytes", limit)
	}
	if digest(b) != d {
		return nil, errors.New("the body is not the one signed")
	}
	return b, nil
}

// nonces remembers the nonces of the signed requests of the last
// fleet.MaxClockOffset × 2, so that none is taken twice.
type nonces struct {
	mu    sync.Mutex
	seen  map[string]time.Time
	swept time.Time
}

// maxNonces bounds the nonces remembered: a thousand followers polling
// once a second for twenty minutes.
const maxNonces = 1_200_000

// add records a nonce, and reports false if it was seen already or there
// is no room.
func (n *nonces) add(nonce string, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen == nil {
		n.seen = map[string]time.Time{}
	}
	if now.Sub(n.swept) > time.Minute || len(n.seen) >= maxNonces {
		for k, t := range n.seen {
			if now.Sub(t) > 2*fleet.MaxClockOffset {
				delete(n.seen, k)
			}
		}
		n.swept = now
	}
	if _, ok := n.seen[nonce]; ok || len(n.seen) >= maxNonces {
		return false
	}
	n.seen[nonce] = now
	return true
}

// authError is a request refused for its signature: the leader answers
// 401 and closes the connection.
type authError struct{ reason string }

func (e *authError) Error() string { return "shard: " + e.reason }

// checkRequest checks a request's signature, time, run and nonce, from
// its headers alone.
func (l *Leader) checkRequest(r *http.Request, now time.Time) error {
	at, nonce, d, sig := r.Header.Get(headerTime), r.Header.Get(headerNonce), r.Header.Get(headerBody), r.Header.Get(headerSignature)
	run := r.Header.Get(headerRun)
	if sig == "" {
		return &authError{"the request is not signed: give the follower the fleet's token (-fleet-token-env)"}
	}
	if len(nonce) != 32 || len(d) != 64 || len(run) > 32 {
		return &authError{"the request's signature is malformed"}
	}
	switch {
	case r.URL.Path == pathHello && run != "":
		return &authError{"the request's signature is malformed: a hello names no run"}
	case r.URL.Path != pathHello && run == "":
		return &authError{fmt.Sprintf("the request names no run of a leader (%s): its follower is older than this leader, which speaks %s: run the same llmload on every shard", r.URL.Path, version)}
	}
	want := signature(l.Token, r.Method, r.URL.Path, at, nonce, run, d)
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return &authError{"the request is not signed with this fleet's token: give every shard the same one"}
	}
	if run != "" && run != l.run {
		return &authError{fmt.Sprintf("the request was signed for another leader's run (%s): it was recorded and replayed, or its follower follows another leader", clip(run))}
	}
	ns, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return &authError{"the request's time is malformed"}
	}
	if off := now.Sub(time.Unix(0, ns)); off > fleet.MaxClockOffset || off < -fleet.MaxClockOffset {
		return &authError{fmt.Sprintf("the request was signed %v from the leader's clock, beyond %v: set the follower's clock (NTP)", off.Round(time.Second), fleet.MaxClockOffset)}
	}
	if !l.nonces.add(nonce, now) {
		return &authError{"the request was sent before (its nonce is taken)"}
	}
	return nil
}

// bodyOf reads a checked request's body, at most limit bytes, and checks
// it against the digest its signature covers.
func bodyOf(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, &tooLarge{limit}
	}
	b, err := readChecked(http.MaxBytesReader(w, r.Body, limit), limit, r.Header.Get(headerBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, &tooLarge{limit}
	}
	return b, err
}

type tooLarge struct{ limit int64 }

func (e *tooLarge) Error() string {
	return fmt.Sprintf("shard: the request's body is above %d bytes", e.limit)
}
