// Package counts adds up tallies kept as maps, such as requests by error
// kind or by token source, as recordings and cells merge.
package counts

// Add adds from's counts into to and returns it, made when to is nil and
// from has a count to add; zero counts add no key.
func Add[K comparable](to, from map[K]int) map[K]int {
	for k, n := range from {
		if n == 0 {
			continue
		}
		if to == nil {
			to = make(map[K]int)
		}
		to[k] += n
	}
	return to
}
