// Package enumtext writes and reads the names of llmload's enumerations
// (a status, an error kind, an engine), so that an enumeration's String,
// MarshalText and UnmarshalText are a line each and agree with one table
// of names.
package enumtext

import "fmt"

// Name returns names[v], or typ(v), such as "Status(9)", for a value
// without a name.
func Name[T ~uint8](names []string, v T, typ string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

// Parse sets *v to the value whose name is b. For a name not in names it
// leaves *v as it is and returns an error that says what was expected:
// what is the message's start, such as "matrix: unknown status".
func Parse[T ~uint8](v *T, names []string, b []byte, what string) error {
	for i, n := range names {
		if string(b) == n {
			*v = T(i)
			return nil
		}
	}
	return fmt.Errorf("%s %q", what, b)
}
