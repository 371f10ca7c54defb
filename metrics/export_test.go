package metrics

// EncodeV2 and DecodeV2 give the tests the bare V2 encoding that a
// histogram's JSON holds in "v2".
func (h *Histogram) EncodeV2() ([]byte, error) { return h.encodeV2() }
func (h *Histogram) DecodeV2(b []byte) error   { return h.decodeV2(b) }
