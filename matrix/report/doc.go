// Package report renders the speed-test matrix's results documents
// ([github.com/llmload/llmload/matrix.Results]) and compares runs.
//
// [Write] writes results in a [Format]: a terminal table shaped like the
// seed page, Markdown, CSV, the JSON document, a self-contained HTML page,
// or every cell's time series as CSV. A simulated run's figures are shown
// in the simulated server's own time.
//
// [Compare] sets runs side by side cell by cell, each figure of the next
// run divided by the base run's, and marks a figure better or worse only
// when it moved by more than 5% and beyond the noise of each run's
// requests ([github.com/llmload/llmload/matrix.Interval]); with runs
// repeated on a side, the runs' own differences are that noise.
// [Comparison.Write] writes a comparison in the same formats.
//
// The server's text is data: every report prints it without control
// characters, and the HTML page refers to nothing outside itself.
package report
