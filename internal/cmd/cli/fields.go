package cli

import (
	"errors"
	"strings"

	"github.com/llmload/llmload/internal/errlist"
	"github.com/llmload/llmload/loadgen"
)

// Fields maps the settings of a library's values, named as a
// [loadgen.ConfigError] names them ("Benchmark.Concurrency"), to the
// flags that set them ("-concurrency"): a command lets the library check
// its settings and says what is wrong in its users' words, the flags.
// A matrix spec's fields are named "Spec." and the field
// ("Spec.Concurrency"), and said as the flag and the reason
// ("-concurrency holds 0, below 1: …").
// A field with an index ("Benchmark.Concurrency[1]") is the flag of the
// field without it; a field that is in no entry is left as it is.
type Fields map[string]string

// Error returns err with each ConfigError it holds about a field of the
// table rewritten to name the flag: "-concurrency 0: give 1 to 16384
// streams" for the field's "is 0: give 1 to 16384 streams", else
// "-flag: " and the reason. Any other error, and nil, is returned as it
// is.
func (f Fields) Error(err error) error {
	var list errlist.List
	if !errors.As(err, &list) {
		return f.rewrite(err)
	}
	var out errlist.List
	for _, e := range list {
		out.Add(f.rewrite(e))
	}
	return out.Err()
}

// rewrite rewrites err if it is a ConfigError about a field of the
// table.
func (f Fields) rewrite(err error) error {
	ce, ok := err.(*loadgen.ConfigError)
	if !ok {
		return err
	}
	flag, ok := f.flag(ce.Field)
	if !ok {
		return err
	}
	if strings.HasPrefix(ce.Field, "Spec.") { // a matrix spec's reasons read on from the flag
		return &flagError{Flag: flag, Msg: flag + " " + ce.Reason, Err: ce}
	}
	if v, rest, ok := strings.Cut(strings.TrimPrefix(ce.Reason, "is "), ": "); ok && strings.HasPrefix(ce.Reason, "is ") && !strings.Contains(v, " ") {
		return &flagError{Flag: flag, Msg: flag + " " + v + ": " + rest, Err: ce}
	}
	return &flagError{Flag: flag, Msg: flag + ": " + ce.Reason, Err: ce}
}

// flag returns the flag of field, or of field without its index.
func (f Fields) flag(field string) (string, bool) {
	if flag, ok := f[field]; ok {
		return flag, true
	}
	base, _, indexed := strings.Cut(field, "[")
	flag, ok := f[base]
	return flag, ok && indexed
}

// A flagError is a library's ConfigError said of the flag that set the
// field; errors.As still finds the library's error.
type flagError struct {
	Flag string // such as "-concurrency"
	Msg  string
	Err  error // a *loadgen.ConfigError
}

func (e *flagError) Error() string { return e.Msg }

// Unwrap returns the library's error.
func (e *flagError) Unwrap() error { return e.Err }
