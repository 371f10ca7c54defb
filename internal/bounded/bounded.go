// Package bounded reads a file or a body up to a limit and says whether it
// held more: the one rule for every input whose size llmload bounds.
package bounded

import "io"

// Read reads r to its end or to limit bytes, whichever comes first.
// whole is false when r holds more than limit bytes: data is then the
// first limit+1 of them, and should be refused rather than used.
func Read(r io.Reader, limit int64) (data []byte, whole bool, err error) {
	data, err = io.ReadAll(io.LimitReader(r, limit+1))
	return data, int64(len(data)) <= limit, err
}
