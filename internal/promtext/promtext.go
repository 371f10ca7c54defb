// Package promtext reads a server's Prometheus text exposition, its
// /metrics, into metric families by name: [Get] fetches and parses one
// reading within a deadline, [Parse] parses one, [Sum] adds up a
// family's series, and [Value] and [Labels] read one series.
package promtext

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MaxBytes bounds the exposition read: a server's /metrics is kilobytes,
// a large one a few megabytes.
const MaxBytes = 16 << 20

// Families are an exposition's metric families, by name.
type Families = map[string]*dto.MetricFamily

// Parse reads a Prometheus text exposition.
func Parse(r io.Reader) (Families, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(r)
}

// StatusError is Get's error for an answer other than 200 OK.
type StatusError struct {
	Target string // the URL as the caller shows it
	Status string // the answer's status, such as "404 Not Found"
}

func (e *StatusError) Error() string { return "GET " + e.Target + ": " + e.Status }

// ParseError is Get's error for an answer that is not a Prometheus text
// exposition.
type ParseError struct {
	Target string // the URL as the caller shows it
	Err    error  // the parser's
}

func (e *ParseError) Error() string { return "parse /metrics: " + e.Err.Error() }

func (e *ParseError) Unwrap() error { return e.Err }

// Get reads the exposition at target with client, within timeout, from a
// 200 answer (else a *StatusError) of at most MaxBytes; an answer that is
// not an exposition is a *ParseError. The errors name target as shown
// gives it (without its password, say), never as it is.
func Get(ctx context.Context, client *http.Client, target, shown string, timeout time.Duration) (Families, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: not a URL", shown)
	}
	resp, err := client.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // without the URL it quotes, a password and all
		}
		return nil, fmt.Errorf("GET %s: %w", shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil, &StatusError{Target: shown, Status: resp.Status}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("GET %s: %d bytes of the answer read: %w", shown, len(body), err)
	case len(body) > MaxBytes:
		return nil, fmt.Errorf("GET %s: the answer is over %d MiB, more than a /metrics", shown, MaxBytes>>20)
	}
	f, err := Parse(bytes.NewReader(body))
	if err != nil {
		return nil, &ParseError{Target: shown, Err: err}
	}
	return f, nil
}

// Sum is the sum of a family's gauges, counters and untyped values over
// its series (per model, per engine).
func Sum(f *dto.MetricFamily) float64 {
	var v float64
	for _, m := range f.GetMetric() {
		if x, ok := value(m); ok {
			v += x
		}
	}
	return v
}

// Value is a series' gauge, counter or untyped value; NaN for another
// kind (a summary, a histogram).
func Value(m *dto.Metric) float64 {
	if v, ok := value(m); ok {
		return v
	}
	return math.NaN()
}

func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	case m.Untyped != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// Labels are a series' labels, by name.
func Labels(m *dto.Metric) map[string]string {
	labels := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	return labels
}
