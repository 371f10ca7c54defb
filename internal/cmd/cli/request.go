package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/llmload/llmload/internal/bounded"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/internal/safefile"
)

// Headers is the repeatable -header flag: 'Name: value', added to every
// request. Its String shows the names only, so a credential's value
// (see [redact.CredentialHeader]) is never printed by the flag package.
type Headers struct {
	h http.Header
}

// String lists the names given, their values left out.
func (hs *Headers) String() string {
	if hs == nil || len(hs.h) == 0 {
		return ""
	}
	names := make([]string, 0, len(hs.h))
	for n := range hs.h {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Set adds one 'Name: value'. It refuses a name that is not an HTTP
// token, a value with a control character (a line break, NUL or any
// other but tab: no server would take the request), and the headers the
// client sets itself.
func (hs *Headers) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	switch {
	case !ok || name == "":
		return errors.New("want 'Name: value'")
	case strings.ContainsAny(name, " \t\"(),/:;<=>?@[\\]{}") || !printable(name):
		return fmt.Errorf("%q is not a header name", name)
	case controlByte(value) >= 0:
		return fmt.Errorf("the value of %s holds the control character %q: every request would fail; give its value without it", name, value[controlByte(value)])
	}
	switch http.CanonicalHeaderKey(name) {
	case "Content-Type", "Accept", "Content-Length", "Host", "Transfer-Encoding", "Connection":
		return fmt.Errorf("%s is the client's own header", http.CanonicalHeaderKey(name))
	}
	if hs.h == nil {
		hs.h = make(http.Header)
	}
	hs.h.Add(name, value)
	return nil
}

// controlByte returns the index of the first control byte of s (C0 but
// tab, and DEL), or -1.
func controlByte(s string) int {
	return strings.IndexFunc(s, func(r rune) bool { return r != '\t' && (r < ' ' || r == 0x7f) })
}

func printable(s string) bool {
	for _, r := range s {
		if r <= ' ' || r >= 0x7f {
			return false
		}
	}
	return true
}

// Header returns the headers given, nil when none.
func (hs *Headers) Header() http.Header { return hs.h.Clone() }

// Secrets returns the values of the credential headers given, for a
// redactor.
func (hs *Headers) Secrets() []string { return redact.HeaderSecrets(hs.h) }

// short describes the credential headers whose secret (the value, or an
// Authorization's part after its scheme) is under redact.MinLen bytes.
func (hs *Headers) short() []string {
	var out []string
	for name, vs := range hs.h {
		if !redact.CredentialHeader(name) {
			continue
		}
		for _, v := range vs {
			if _, cred, ok := strings.Cut(v, " "); ok && strings.TrimSpace(cred) != "" {
				v = strings.TrimSpace(cred)
			}
			if len(v) < redact.MinLen {
				out = append(out, fmt.Sprintf("the value of -header %s is %d bytes", name, len(v)))
			}
		}
	}
	sort.Strings(out)
	return out
}

// maxBodyExtra bounds a -body-extra file.
const maxBodyExtra = 1 << 20

// ownFields are the body fields llmload sets and counts by, with the
// flag that sets each: a -body-extra that overrode one would send what
// the report does not say (another model, prompt or output length), and
// the figures by model or by length would be false.
var ownFields = map[string]string{
	"model":                 "give the model with -model",
	"messages":              "the prompts are llmload's: give them with -dataset (or -prompt)",
	"prompt":                "the prompts are llmload's: give them with -dataset (or -prompt)",
	"input":                 "the prompts are llmload's: give them with -dataset (or -prompt)",
	"query":                 "the prompts are llmload's: give them with -dataset (or -prompt)",
	"documents":             "the prompts are llmload's: give them with -dataset (or -prompt)",
	"max_tokens":            "give the output length with -output-len (or -max-tokens)",
	"max_completion_tokens": "give the output length with -output-len (or -max-tokens)",
	"max_output_tokens":     "give the output length with -output-len (or -max-tokens)",
}

// ReadBodyExtra reads a -body-extra file: one JSON object whose fields are
// merged into every request body (and override llmload's own). Anything
// else is refused, naming the file, before a request is sent; so are the
// fields llmload sets and reports by (the model, the prompt and the
// output length: see ownFields), each naming the flag to use instead.
func ReadBodyExtra(path string) (map[string]any, error) {
	b, err := readInput(path)
	if err != nil {
		return nil, fmt.Errorf("-body-extra: %w", err)
	}
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if err := d.Decode(&m); err != nil || m == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, fmt.Errorf("-body-extra %s: want one JSON object of fields to add to every request body: %v", path, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("-body-extra %s: more than one JSON value", path)
	}
	if _, ok := m["stream"]; ok {
		return nil, fmt.Errorf("-body-extra %s: sets \"stream\", which llmload needs true", path)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if use, ok := ownFields[k]; ok {
			return nil, fmt.Errorf("-body-extra %s: sets %q, which llmload sets itself and reports by: %s", path, k, use)
		}
	}
	return m, nil
}

// readInput reads a file a flag names (-body-extra, -tools,
// -response-format), at most maxBodyExtra bytes: a regular file, opened
// without blocking, so that a named pipe is refused at once.
func readInput(path string) ([]byte, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, whole, err := bounded.Read(f, maxBodyExtra)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	case !whole:
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxBodyExtra)
	}
	return b, nil
}
