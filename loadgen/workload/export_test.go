package workload

import (
	"io"
	"os"
)

// Started returns how many sessions have started, for the tests.
func (s *Sessions) Started() int { return s.startedCount() }

// Restarted returns how many sessions were started again before their last
// turn, for the tests.
func (s *Sessions) Restarted() int { return s.restartedCount() }

// The trace reader, for the tests.
type TraceReader = traceReader

// NewTraceReader returns a reader of the trace in r, for the tests.
var NewTraceReader = newTraceReader

// Next returns the next request, for the tests.
func (t *traceReader) Next() (TraceEntry, error) { return t.next() }

// Format returns the trace's format, known once a record was read, for the
// tests.
func (t *traceReader) Format() string { return t.format }

// The dataset reader, for the tests.
type (
	DatasetReader = datasetReader
	Record        = datasetRecord
)

// NewDatasetReader returns a reader of the dataset in r, without image
// files, for the tests.
func NewDatasetReader(r io.Reader, name string) *DatasetReader { return newDatasetReader(r, name, nil) }

// NewDatasetReaderIn returns a reader of the dataset in r whose image
// files are under root, for the tests.
var NewDatasetReaderIn = newDatasetReader

// ImageRefs returns the record's images as the file gives them: a URL,
// or a file's path.
func (r datasetRecord) ImageRefs() []string {
	var refs []string
	for _, ref := range r.Images {
		refs = append(refs, ref.url+ref.path)
	}
	return refs
}

// ImageURLs returns the URLs a record's images are sent as, for the tests.
func ImageURLs(root *os.Root, r datasetRecord) ([]string, error) { return imageURLs(root, r.Images) }

// EstimateTokens is the estimate of a dataset reply's tokens, for the tests.
var EstimateTokens = estimateTokens

// What the package keeps to itself, for the tests.
type TraceEntry = traceEntry

func (rp *Replay) Item(e traceEntry) Item { return rp.item(e) }

const (
	MaxLength = maxLength
	Mooncake  = formatMooncake
	Azure     = formatAzure
)

var (
	ErrLength = errLength
	ErrEmpty  = errEmpty
)
