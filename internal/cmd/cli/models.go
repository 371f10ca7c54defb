package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Bounds on -model's weighted form.
const (
	maxModels      = 64
	maxModelWeight = 1000
)

// Models is -model's weighted form, "a=3,b=1": the models a benchmark's
// requests name, each with its weight.
type Models struct {
	Names   []string
	Weights []int
}

// ParseModels reads -model: one name (or none), or several with weights,
// "a=3,b=1" (a name without "=N" weighs 1). A model name is the server's
// and may hold '=' itself: only a trailing "=N", N a whole number, is a
// weight, so "org/m=v2" is one model's name and "m=3" is model m with
// weight 3 (a trailing "=-1" is a weight, refused). It returns nil for one
// name without a weight, or none, which every request names as it is.
func ParseModels(s string) (*Models, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := &Models{}
	seen := map[string]bool{}
	weighted := false
	for part := range strings.SplitSeq(s, ",") {
		name, weight, hasWeight := cutWeight(part)
		weighted = weighted || hasWeight
		switch {
		case hasWeight && (weight < 1 || weight > maxModelWeight):
			return nil, fmt.Errorf("-model %q: the weight of %q must be a whole number from 1 to %d", s, name, maxModelWeight)
		case name == "":
			return nil, fmt.Errorf("-model %q: want NAME=WEIGHT,NAME=WEIGHT, such as a=3,b=1", s)
		case seen[name]:
			return nil, fmt.Errorf("-model %q: %q is given twice", s, name)
		case len(m.Names) == maxModels:
			return nil, fmt.Errorf("-model %q: more than %d models", s, maxModels)
		}
		seen[name] = true
		m.Names = append(m.Names, name)
		m.Weights = append(m.Weights, weight)
	}
	if len(m.Names) == 1 && !weighted {
		return nil, nil
	}
	return m, nil
}

// cutWeight splits one item of -model into the model's name and its
// weight: the weight is what follows the last '=' when that is an integer
// (signed, so that "=-1" is refused as a weight rather than taken into the
// name); otherwise the whole item is the name, weighing 1. A weight too
// large for an int comes back as 0, out of bounds.
func cutWeight(part string) (name string, weight int, ok bool) {
	part = strings.TrimSpace(part)
	i := strings.LastIndexByte(part, '=')
	if i < 0 || !isInteger(strings.TrimSpace(part[i+1:])) {
		return part, 1, false
	}
	weight, err := strconv.Atoi(strings.TrimSpace(part[i+1:]))
	if err != nil {
		weight = 0
	}
	return strings.TrimSpace(part[:i]), weight, true
}

// isInteger reports whether s is digits, after an optional sign.
func isInteger(s string) bool {
	if strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// String writes the models as -model takes them: "a=3,b=1".
func (m *Models) String() string {
	parts := make([]string, len(m.Names))
	for i, n := range m.Names {
		parts[i] = n + "=" + strconv.Itoa(m.Weights[i])
	}
	return strings.Join(parts, ",")
}

// Cycle returns the order in which requests name the models: a cycle of
// as many names as the weights add up to, each name as often as its
// weight, interleaved by smooth weighted round robin (nginx's: each turn,
// every model gains its weight, the one with the most is chosen and
// loses the total), so that every stretch of requests holds each model
// within one request of its share. The cycle starts at a place drawn from
// seed.
func (m *Models) Cycle(seed uint64) []string {
	total := 0
	for _, w := range m.Weights {
		total += w
	}
	current := make([]int, len(m.Weights))
	cycle := make([]string, 0, total)
	for range total {
		best := 0
		for i, w := range m.Weights {
			current[i] += w
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		cycle = append(cycle, m.Names[best])
	}
	start := int(seed % uint64(total))
	return slices.Concat(cycle[start:], cycle[:start])
}
