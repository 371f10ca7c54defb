package matrix

// ErrNothingMeasured is, for the tests, the error that every error of
// Results.Measured is.
var ErrNothingMeasured = errNothingMeasured
