package metrics

import "time"

// What the tests reach that the package does not export.

// EncodeV2 and DecodeV2 give the tests the bare V2 encoding that a
// histogram's JSON holds in "v2".
func (h *Histogram) EncodeV2() ([]byte, error) { return h.encodeV2() }
func (h *Histogram) DecodeV2(b []byte) error   { return h.decodeV2(b) }

var ErrNilHistogram = errNilHistogram

func NewHistogram() *Histogram                        { return &Histogram{h: newHDR()} }
func (h *Histogram) RecordN(d time.Duration, n int64) { h.recordN(d, n) }
func (h *Histogram) Clamped() int64                   { return h.clampedCount() }
func (h *Histogram) Mean() time.Duration              { return h.mean() }
func (h *Histogram) Min() time.Duration               { return h.minimum() }
func (h *Histogram) Max() time.Duration               { return h.maximum() }
func (h *Histogram) Merge(o *Histogram) error         { return h.merge(o) }
func (h *Histogram) Clone() *Histogram                { return h.clone() }
func (h *Histogram) Count() int64                     { return h.count() }
func (h *Histogram) Reset()                           { h.reset() }
func (tl *Timeline) TPOT() time.Duration              { return tl.tpot() }
func (tl *Timeline) ClientWait() time.Duration        { return tl.clientWait() }

func (hs *Histograms) Merge(o Histograms) error { return hs.merge(o) }
func (s SLO) Met(tl *Timeline) bool             { return s.met(tl) }
func (s SLO) Missed(tl *Timeline) bool          { return s.missed(tl) }
func (w Window) Contains(t time.Time) bool      { return w.contains(t) }
