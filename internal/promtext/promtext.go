// Package promtext reads a server's Prometheus text exposition, its
// /metrics, into metric families by name: [Get] fetches and parses one
// reading within a deadline, [Parse] parses one, and [Sum] adds up a
// family's series.
package promtext

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// Get reads the exposition at target with client, within timeout: at
// most MaxBytes of it, from a 200 answer. The errors name target as shown
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
		return nil, fmt.Errorf("GET %s: %s", shown, resp.Status)
	}
	f, err := Parse(io.LimitReader(resp.Body, MaxBytes))
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return f, nil
}

// Sum is the sum of a family's gauges, counters and untyped values over
// its series (per model, per engine).
func Sum(f *dto.MetricFamily) float64 {
	var v float64
	for _, m := range f.GetMetric() {
		switch {
		case m.Gauge != nil:
			v += m.GetGauge().GetValue()
		case m.Counter != nil:
			v += m.GetCounter().GetValue()
		case m.Untyped != nil:
			v += m.GetUntyped().GetValue()
		}
	}
	return v
}
