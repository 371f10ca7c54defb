package matrix

import (
	"fmt"
	"io"

	"github.com/llmload/llmload/internal/enumtext"
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

// Format names a report format, as a command line takes it. Its zero value
// means "not set".
type Format uint8

// The report formats.
const (
	// FormatTable: a plain-text table for a terminal.
	FormatTable Format = iota + 1
	// FormatMarkdown: GitHub-flavored Markdown.
	FormatMarkdown
	// FormatCSV: the "All measurements" table as CSV.
	FormatCSV
	// FormatJSON: the versioned JSON document.
	FormatJSON
	// FormatHTML: a self-contained HTML page.
	FormatHTML
	// FormatSeriesCSV: every measured cell's time series (see
	// [Measurement].Series) as CSV, a row a bucket.
	FormatSeriesCSV
)

var formatNames = [...]string{"", "table", "markdown", "csv", "json", "html", "series-csv"}

// String returns the format's name: "table", "markdown", "csv", "json",
// "html" or "series-csv".
func (f Format) String() string { return enumtext.Name(formatNames[:], f, "Format") }

// MarshalText returns the format's name.
func (f Format) MarshalText() ([]byte, error) {
	if int(f) < len(formatNames) {
		return []byte(formatNames[f]), nil
	}
	return nil, fmt.Errorf("matrix: invalid format %d", f)
}

// UnmarshalText reads a format's name, so that a Format can be a flag
// (flag.TextVar).
func (f *Format) UnmarshalText(b []byte) error {
	for i, name := range formatNames {
		if i > 0 && name == string(b) {
			*f = Format(i)
			return nil
		}
	}
	return fmt.Errorf("matrix: unknown format %q (want table, markdown, csv, json, html or series-csv)", b)
}

// Write writes rep to w in the format f.
func (f Format) Write(w io.Writer, rep Report) error {
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
	return fmt.Errorf("matrix: cannot write a report in format %v: set table, markdown, csv, json, html or series-csv", f)
}
