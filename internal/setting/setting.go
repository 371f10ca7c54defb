// Package setting reads a numeric setting the way llmload's options are
// written: zero means the default, a negative value means none.
package setting

// Resolve returns what v means as such a setting: def when v is zero, 0
// when v is negative, v otherwise.
func Resolve[T ~int | ~int64](v, def T) T {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return def
	}
	return v
}
