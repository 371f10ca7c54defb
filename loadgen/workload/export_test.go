package workload

// Started returns how many sessions have started, for the tests.
func (s *Sessions) Started() int { return s.startedCount() }
