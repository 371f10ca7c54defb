package workload

// Started returns how many sessions have started, for the tests.
func (s *Sessions) Started() int { return s.startedCount() }

// The dataset reader, for the tests.
type (
	DatasetReader = datasetReader
	Record        = datasetRecord
)

// NewDatasetReader returns a reader of the dataset in r, for the tests.
var NewDatasetReader = newDatasetReader

// EstimateTokens is the estimate of a dataset reply's tokens, for the tests.
var EstimateTokens = estimateTokens
