package matrix

import (
	"fmt"
	"io"

	"github.com/llmload/llmload/internal/enumtext"
)

// A Report renders in every format: [*Results] and [*Comparison] are
// Reports.
type Report interface {
	WriteTable(w io.Writer) error
	WriteMarkdown(w io.Writer) error
	WriteCSV(w io.Writer) error
	WriteJSON(w io.Writer) error
	WriteHTML(w io.Writer) error
}

// Format names a report format, as a command line takes it. Its zero value
// means "not set".
type Format uint8

// The report formats.
const (
	FormatUnknown Format = iota
	// FormatTable: a plain-text table for a terminal (WriteTable).
	FormatTable
	// FormatMarkdown: GitHub-flavored Markdown (WriteMarkdown).
	FormatMarkdown
	// FormatCSV: the "All measurements" table as CSV (WriteCSV).
	FormatCSV
	// FormatJSON: the versioned JSON document (WriteJSON).
	FormatJSON
	// FormatHTML: a self-contained HTML page (WriteHTML).
	FormatHTML
)

var formatNames = [...]string{"", "table", "markdown", "csv", "json", "html"}

// String returns the format's name: "table", "markdown", "csv", "json" or
// "html".
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
	return fmt.Errorf("matrix: unknown format %q (want table, markdown, csv, json or html)", b)
}

// Write writes rep to w in the format f.
func (f Format) Write(w io.Writer, rep Report) error {
	switch f {
	case FormatTable:
		return rep.WriteTable(w)
	case FormatMarkdown:
		return rep.WriteMarkdown(w)
	case FormatCSV:
		return rep.WriteCSV(w)
	case FormatJSON:
		return rep.WriteJSON(w)
	case FormatHTML:
		return rep.WriteHTML(w)
	}
	return fmt.Errorf("matrix: cannot write a report in format %v: set table, markdown, csv, json or html", f)
}
