package matrix

import (
	"fmt"
	"io"
	"io/fs"
)

// A Report renders in every format: [*Results] and [*Comparison] are
// Reports, and [Format.Write] is the one way to write either.
type Report interface {
	writeTable(w io.Writer) error
	writeMarkdown(w io.Writer) error
	writeCSV(w io.Writer) error
	writeJSON(w io.Writer) error
	writeHTML(w io.Writer) error
	writeSeriesCSV(w io.Writer) error
}

// Format names a report format, as a command line takes it: "table",
// "markdown", "csv", "json", "html" or "series-csv". Its zero value means
// "not set".
type Format string

// The report formats.
const (
	// FormatTable: a plain-text table for a terminal.
	FormatTable Format = "table"
	// FormatMarkdown: GitHub-flavored Markdown.
	FormatMarkdown Format = "markdown"
	// FormatCSV: the "All measurements" table as CSV.
	FormatCSV Format = "csv"
	// FormatJSON: the versioned JSON document.
	FormatJSON Format = "json"
	// FormatHTML: a self-contained HTML page.
	FormatHTML Format = "html"
	// FormatSeriesCSV: every measured cell's time series (see
	// [Measurement].Series) as CSV, a row a bucket.
	FormatSeriesCSV Format = "series-csv"
)

// Write writes rep to w in the format f. A format of another name is an
// error, and writes nothing; so is a nil writer or report (a nil
// *Results or *Comparison too), an error that is [fs.ErrInvalid] (see
// [errors.Is]).
func (f Format) Write(w io.Writer, rep Report) error {
	if err := checkWrite(w, rep); err != nil {
		return err
	}
	switch f {
	case FormatTable:
		return rep.writeTable(w)
	case FormatMarkdown:
		return rep.writeMarkdown(w)
	case FormatCSV:
		return rep.writeCSV(w)
	case FormatJSON:
		return rep.writeJSON(w)
	case FormatHTML:
		return rep.writeHTML(w)
	case FormatSeriesCSV:
		return rep.writeSeriesCSV(w)
	}
	return fmt.Errorf("matrix: unknown format %q (want table, markdown, csv, json, html or series-csv)", string(f))
}

// checkWrite refuses a nil writer or report, which would panic.
func checkWrite(w io.Writer, rep Report) error {
	what := ""
	switch r := rep.(type) {
	case nil:
		what = "the report is nil"
	case *Results:
		if r == nil {
			what = "the report is a nil *Results"
		}
	case *Comparison:
		if r == nil {
			what = "the report is a nil *Comparison"
		}
	}
	if what == "" && w == nil {
		what = "the writer is nil"
	}
	if what == "" {
		return nil
	}
	return fmt.Errorf("matrix: Format.Write: %s: %w", what, fs.ErrInvalid)
}
