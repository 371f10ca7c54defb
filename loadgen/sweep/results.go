package sweep

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/capacity"
	"github.com/llmload/llmload/internal/seriesview"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/metrics"
)

// Schema names the version of the results document. Readers refuse a
// document of another major version.
//
// v1.1 moved the API from the server's object to the document's: a v1
// document reads with its API where it was. v1.2 says the axis the runs
// vary along (Results.Axis, Found.Axis) and a search's answer in streams
// (Found.Concurrency): a document without them searched rates.
const Schema = "llmload.bench/v1.2"

// Results are a benchmark's runs against one server: a single load, a
// sweep, or a search. It is one Go value, and as JSON (see
// [Results.Write]) a versioned document, with every run's histograms,
// that other tools read.
type Results struct {
	Schema string `json:"schema"`
	// Server names what was measured. Its Limits are the ones the runs
	// were checked against, if any.
	Server capacity.Server `json:"server"`
	// API is the API every request spoke.
	API loadgen.API `json:"api"`
	// Workload says what was sent: the dataset, the lengths or the trace.
	Workload string `json:"workload"`
	// ImageTokens is the prompt tokens the server counted for the images
	// every request carried, measured beside a short prompt sent with
	// and without them; 0 when none were sent or the server's usage did
	// not tell. The runs' input tokens include them.
	ImageTokens int `json:"image_tokens,omitempty"`
	// Profile names how the loads were chosen: a load's kind
	// ("concurrency", "constant", "poisson", "gamma"), "trace", "sweep"
	// or "slo".
	Profile string `json:"profile"`
	// Axis is what the runs' loads vary along: concurrency (closed loops
	// of so many streams) or rate (open loops of so many requests a
	// second); none for a schedule's. A sweep or a search written before
	// it was kept reads as AxisRate.
	Axis Axis `json:"axis,omitempty"`
	// Seed is the seed of the prompts' text, their lengths and the
	// arrivals, when one seed made them all: given again, it repeats them.
	Seed uint64 `json:"seed,omitempty"`
	// Objective is what each run was checked against, if anything.
	Objective *Objective `json:"objective,omitempty"`
	Started   time.Time  `json:"started"`
	Finished  time.Time  `json:"finished,omitzero"`
	Runs      []Result   `json:"runs"`
	// Search is a search's answer.
	Search *Found `json:"search,omitempty"`
	// Notes say what to keep in mind when reading the results.
	Notes []string `json:"notes,omitempty"`
}

// Write writes the results to w in format:
//
//   - "table" (or ""): for a terminal, a single run as vLLM's benchmark
//     prints one (request and token throughput, goodput, then TTFT, TPOT,
//     ITL and end-to-end latency by mean, median, p90 and p99), several as
//     one row each, then a search's answer and the notes;
//   - "json": the versioned, indented JSON document [ReadResults] reads;
//   - "html": a page of its own, the runs' table and, for two runs or
//     more, latency–throughput curves (time to first token, time per
//     output token and end-to-end latency, median and 99th percentile,
//     against each run's Capacity, the requests a second its output rate
//     stands for), with a search's answer marked; latencies that span more
//     than a factor of 30 are drawn on a logarithmic scale.
//     Each run's time series (Result.Series), where it kept one, is drawn
//     under them: output tok/s, latencies and requests at once, each
//     bucket's figures on hover;
//   - "series-csv": each run's time series, a row a bucket (the run's
//     label, the bucket's start in seconds from the run's first and its
//     length, whether it starts in the window, then its figures).
//
// Another format is an error that names the four. Nil results or a nil
// writer are an error that is [fs.ErrInvalid] (see [errors.Is]), and
// nothing is written.
func (r *Results) Write(w io.Writer, format string) error {
	switch {
	case r == nil:
		return fmt.Errorf("sweep: Results.Write: the results are nil: %w", fs.ErrInvalid)
	case w == nil:
		return fmt.Errorf("sweep: Results.Write: the writer is nil: %w", fs.ErrInvalid)
	}
	switch format {
	case "", "table":
		return r.writeTable(w)
	case "json":
		return r.writeJSON(w)
	case "html":
		return r.writeHTML(w)
	case "series-csv":
		return r.writeSeriesCSV(w)
	}
	return fmt.Errorf("sweep: unknown format %q: write table, json, html or series-csv", format)
}

// writeSeriesCSV writes each run's time series as CSV, a row a bucket.
func (r *Results) writeSeriesCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"run", "t_s", "bucket_s", "in_window", "tok_s", "started", "finished", "failed",
		"ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p90_ms", "itl_p99_ms",
		"streams_decoding", "streams_waiting"})
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, run := range r.Runs {
		s := run.Series
		if s == nil || s.Every <= 0 {
			continue
		}
		for i, row := range seriesview.Rows(s, 1) {
			in := "0"
			if start := s.Start.Add(time.Duration(i) * s.Every); !start.Before(s.Window.Start) && start.Before(s.Window.End) {
				in = "1"
			}
			_ = cw.Write([]string{run.Label, num(row.From), num(s.Every.Seconds()), in, num(row.TokS),
				strconv.Itoa(row.Started), strconv.Itoa(row.Finished), strconv.Itoa(row.Failed),
				num(row.TTFT50), num(row.TTFT90), num(row.TTFT99), num(row.ITL50), num(row.ITL90), num(row.ITL99),
				num(row.Decoding), num(row.Waiting)})
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("sweep: write series CSV: %w", err)
	}
	return nil
}

// writeJSON writes the results as an indented JSON document.
func (r *Results) writeJSON(w io.Writer) error {
	c := *r
	if c.Schema == "" {
		c.Schema = Schema
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&c); err != nil {
		return fmt.Errorf("sweep: write results: %w", err)
	}
	return nil
}

// ReadResults reads a document written by [Results.Write] in "json". A
// document of another major version, or none, is refused, and so is a nil
// reader, with an error that is [fs.ErrInvalid].
func ReadResults(rd io.Reader) (*Results, error) {
	if rd == nil {
		return nil, fmt.Errorf("sweep: read results: the reader is nil: %w", fs.ErrInvalid)
	}
	var r Results
	b, err := io.ReadAll(rd)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		return nil, fmt.Errorf("sweep: read results: %w", err)
	}
	if major(r.Schema) != major(Schema) {
		return nil, fmt.Errorf("sweep: the document's schema is %q, not %s: it is not a benchmark's results, or another version's", r.Schema, Schema)
	}
	kinds := metrics.Kinds()
	for i, run := range r.Runs {
		if run.Load == nil {
			return nil, fmt.Errorf("sweep: read results: run %d (%q) has no load: every run a benchmark writes says its load", i+1, run.Label)
		}
		for k := range run.Summary.Errors {
			if !slices.Contains(kinds, k) {
				return nil, fmt.Errorf("sweep: read results: run %d (%q) counts failures of an unknown kind %q", i+1, run.Label, k)
			}
		}
	}
	// A sweep or a search written before the axis was kept varied rates.
	if r.Axis == 0 && (r.Profile == "sweep" || r.Profile == "slo") {
		r.Axis = AxisRate
	}
	if r.Search != nil && r.Search.Axis == 0 {
		r.Search.Axis = AxisRate
	}
	// A v1 document kept the API in the server's object.
	var v1 struct {
		API    *loadgen.API `json:"api"`
		Server struct {
			API *loadgen.API `json:"api"`
		} `json:"server"`
	}
	if json.Unmarshal(b, &v1) == nil && v1.API == nil && v1.Server.API != nil {
		r.API = *v1.Server.API
	}
	// A run written before its summary held them kept the TTFT split and
	// the latency from the scheduled arrival beside it.
	var old struct {
		Runs []struct {
			Split          metrics.TTFTSplit    `json:"server_split"`
			LatencyFromDue metrics.Distribution `json:"latency_from_due"`
		} `json:"runs"`
	}
	if json.Unmarshal(b, &old) == nil && len(old.Runs) == len(r.Runs) {
		for i, o := range old.Runs {
			s := &r.Runs[i].Summary
			if s.Split.Requests == 0 {
				s.Split = o.Split
			}
			if s.LatencyFromDue.Count == 0 {
				s.LatencyFromDue = o.LatencyFromDue
			}
		}
	}
	return &r, nil
}

// major returns a schema's name and major version: "llmload.bench/v1".
func major(s string) string {
	name, v, ok := strings.Cut(s, "/v")
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, ".")
	return name + "/v" + v
}
