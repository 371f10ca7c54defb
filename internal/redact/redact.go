// Package redact keeps credentials out of what llmload prints, logs and
// saves: the password of a URL and API keys.
package redact

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// redacted replaces a password or an API key in text.
const redacted = "xxxxx"

// URL returns rawURL with the password of its user information
// replaced by "xxxxx", as [url.URL.Redacted] does:
// "http://user:xxxxx@host/v1". A URL without a password is returned as it
// is; one that does not parse has everything between "//" and the "@"
// before its host replaced.
func URL(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		if _, ok := u.User.Password(); !ok {
			return rawURL
		}
		return u.Redacted()
	}
	scheme, rest, ok := strings.Cut(rawURL, "//")
	if !ok {
		return rawURL
	}
	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return rawURL
	}
	user, _, _ := strings.Cut(authority[:at], ":")
	return scheme + "//" + user + ":" + redacted + authority[at:] + path
}

// Errors of [Restore].
var (
	// ErrPasswordNeeded: the saved URL had a password, which URL
	// removed; it must be given again.
	ErrPasswordNeeded = errors.New("the URL had a password, which was not kept: give the URL again")
	// ErrOtherURL: the URL given is not the saved one.
	ErrOtherURL = errors.New("the URL given is not the one saved")
)

// Restore returns the URL to send to for one that [URL] wrote
// (saved, as in a results file) and one the user gives again (given, ""
// when none): given when it is saved itself or saved with its password,
// saved when nothing is given and saved had no password. Otherwise it
// returns [ErrOtherURL] or [ErrPasswordNeeded], wrapped with the URLs,
// redacted.
func Restore(saved, given string) (string, error) {
	if given != "" {
		if given != saved && URL(given) != saved && URL(given) != URL(saved) {
			return "", fmt.Errorf("%w: %s, not %s", ErrOtherURL, URL(given), URL(saved))
		}
		return given, nil
	}
	if u, err := url.Parse(saved); err == nil {
		if p, ok := u.User.Password(); ok && p == redacted {
			return "", fmt.Errorf("%w (%s)", ErrPasswordNeeded, saved)
		}
	}
	return saved, nil
}

// minBarePassword is the shortest password, or key, replaced where it
// appears outside a URL: a shorter one is a word of ordinary text ("a",
// "pw") as often as it is a credential.
const minBarePassword = 4

// MinLen is the shortest secret replaced wherever it appears, even inside
// a longer word. A shorter one is replaced only where it stands as a whole
// value (between characters that are not letters, digits, '-' or '_'):
// replacing it inside other words would garble the text and, by the gaps
// it leaves, show what the secret is. Commands warn of a key shorter than
// this.
const MinLen = 8

// A Redactor removes credentials from text before it is printed, logged
// or saved: the password of a URL's user information and API keys, in
// the forms they take in URLs and error messages. It replaces a secret
// only whole, never a part of one, and a short one (under [MinLen] bytes)
// only where it stands as a whole value. A nil Redactor removes nothing.
type Redactor struct {
	r     *strings.Replacer // the URL's user information, and long secrets
	short []string          // secrets under MinLen, longest first
}

// New returns a Redactor for the password in rawURL, if it has
// one, and for keys. Empty keys are ignored.
func New(rawURL string, keys ...string) *Redactor {
	var pairs, bare []string
	// The user information as it is written, and as url.URL writes it;
	// then the bare password, and its escaped form.
	if _, rest, ok := strings.Cut(rawURL, "//"); ok {
		authority := rest
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			authority = rest[:i]
		}
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			if user, pass, ok := strings.Cut(authority[:at], ":"); ok && pass != "" {
				pairs = append(pairs, authority[:at+1], user+":"+redacted+"@")
				bare = append(bare, pass)
				if u, err := url.Parse(rawURL); err == nil && u.User != nil {
					pairs = append(pairs, u.User.String()+"@", u.User.Username()+":"+redacted+"@")
					if p, _ := u.User.Password(); p != "" {
						bare = append(bare, url.UserPassword("", p).String()[1:], p)
					}
				}
			}
		}
	}
	r := &Redactor{}
	for _, s := range append(bare, keys...) {
		switch {
		case len(s) < minBarePassword:
			// Too short to tell from ordinary words: left alone.
		case len(s) < MinLen:
			r.short = append(r.short, s)
		default:
			pairs = append(pairs, s, redacted)
		}
	}
	if len(pairs) == 0 && len(r.short) == 0 {
		return nil
	}
	r.r = strings.NewReplacer(pairs...)
	slices.SortStableFunc(r.short, func(a, b string) int { return len(b) - len(a) })
	return r
}

// Redact returns s without the credentials.
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	s = r.r.Replace(s)
	for _, secret := range r.short {
		s = replaceWhole(s, secret)
	}
	return s
}

// replaceWhole replaces secret in s where it stands as a whole value: not
// preceded or followed by a letter, a digit, '-' or '_'.
func replaceWhole(s, secret string) string {
	var b strings.Builder
	for from := 0; ; {
		i := strings.Index(s[from:], secret)
		if i < 0 {
			if b.Len() == 0 {
				return s
			}
			b.WriteString(s[from:])
			return b.String()
		}
		start, end := from+i, from+i+len(secret)
		b.WriteString(s[from:start])
		if wordBefore(s[:start]) || wordAfter(s[end:]) {
			b.WriteString(secret)
		} else {
			b.WriteString(redacted)
		}
		from = end
	}
}

func wordBefore(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && wordRune(r)
}

func wordAfter(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && wordRune(r)
}

func wordRune(r rune) bool {
	return r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// Error returns err with its message redacted; [errors.Is] and
// [errors.As] still see the original chain. It returns nil for nil.
func (r *Redactor) Error(err error) error {
	if err == nil || r == nil {
		return err
	}
	msg := r.Redact(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error whose message has no credentials.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
