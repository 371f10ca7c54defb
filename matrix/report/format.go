package report

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"

	"github.com/llmload/llmload/matrix"
)

// Format names a report format, as a command line takes it: "table",
// "markdown", "csv", "json", "html" or "series-csv". Its zero value means
// "not set".
type Format string

// The report formats.
const (
	// Table: a plain-text table for a terminal.
	Table Format = "table"
	// Markdown: GitHub-flavored Markdown.
	Markdown Format = "markdown"
	// CSV: the "All measurements" table as CSV.
	CSV Format = "csv"
	// JSON: the versioned JSON document.
	JSON Format = "json"
	// HTML: a self-contained HTML page.
	HTML Format = "html"
	// SeriesCSV: every measured cell's time series (see
	// [matrix.Measurement].Series) as CSV, a row a bucket.
	SeriesCSV Format = "series-csv"
)

// renderer is a document that renders in every format: the results of a
// run and a comparison.
type renderer interface {
	writeTable(w io.Writer) error
	writeMarkdown(w io.Writer) error
	writeCSV(w io.Writer) error
	writeJSON(w io.Writer) error
	writeHTML(w io.Writer) error
	writeSeriesCSV(w io.Writer) error
}

// doc is a results document as the renderers take it.
type doc struct{ *matrix.Results }

// Write writes r to w in the format f. A format of another name is an
// error, and writes nothing; so is a nil writer or nil results, an error
// that is [fs.ErrInvalid] (see [errors.Is]).
func Write(w io.Writer, f Format, r *matrix.Results) error {
	if r == nil {
		return invalid("the results are nil")
	}
	return write(w, f, doc{r})
}

// Write writes the comparison to w in the format f, as [Write] writes
// results; a nil comparison is an error that is [fs.ErrInvalid].
func (c *Comparison) Write(w io.Writer, f Format) error {
	if c == nil {
		return invalid("the comparison is nil")
	}
	return write(w, f, c)
}

func write(w io.Writer, f Format, rep renderer) error {
	if w == nil {
		return invalid("the writer is nil")
	}
	switch f {
	case Table:
		return rep.writeTable(w)
	case Markdown:
		return rep.writeMarkdown(w)
	case CSV:
		return rep.writeCSV(w)
	case JSON:
		return rep.writeJSON(w)
	case HTML:
		return rep.writeHTML(w)
	case SeriesCSV:
		return rep.writeSeriesCSV(w)
	}
	return fmt.Errorf("report: unknown format %q (want table, markdown, csv, json, html or series-csv)", string(f))
}

// invalid is the error of a nil writer or document.
func invalid(what string) error {
	return fmt.Errorf("report: Write: %s: %w", what, fs.ErrInvalid)
}

// writeJSON writes the results document, indented, as SaveFile does.
func (r doc) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.Results); err != nil {
		return fmt.Errorf("report: write JSON: %w", err)
	}
	return nil
}
