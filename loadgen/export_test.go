package loadgen

// ParseChunkForBenchmark exposes the chunk parser to the external tests.
func ParseChunkForBenchmark(data []byte) error {
	var c chunk
	return parseChunk(data, &c)
}
