// Package gib converts memory figures given in GiB, as vLLM logs them and
// as the capacity command's flags take them, to bytes.
package gib

import "math"

// Bytes converts a figure in GiB ("Available KV cache memory: 6.01 GiB")
// to bytes, rounded to the nearest byte.
func Bytes(gib float64) int64 { return int64(math.Round(gib * (1 << 30))) }
