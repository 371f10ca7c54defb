// Package errlist holds the errors of one check, such as every field of a
// configuration that cannot work, and reports them as one error on one
// line.
package errlist

import "strings"

// List is the errors of one check. Its Error writes them on one line,
// separated by "; ", each without the "package: " prefix that the first
// one already shows; errors.Is and errors.As see every one.
type List []error

// Add adds err, or the errors it holds if it is a List; nil adds nothing.
func (l *List) Add(err error) {
	switch e := err.(type) {
	case nil:
	case List:
		*l = append(*l, e...)
	default:
		*l = append(*l, err)
	}
}

// Err returns nil for no error, the error itself for one, and the List
// for more.
func (l List) Err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return l
}

// Error lists every error on one line.
func (l List) Error() string {
	msgs := make([]string, len(l))
	prefix := ""
	for i, e := range l {
		msgs[i] = e.Error()
		if i == 0 {
			if p, _, ok := strings.Cut(msgs[0], ": "); ok && !strings.Contains(p, " ") {
				prefix = p + ": "
			}
		} else if prefix != "" {
			msgs[i] = strings.TrimPrefix(msgs[i], prefix)
		}
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the errors, for errors.Is and errors.As.
func (l List) Unwrap() []error { return l }
