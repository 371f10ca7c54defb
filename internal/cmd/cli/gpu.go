package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/dcgm"
)

// GPUFlags are the flags that read the server's GPUs while it is
// measured: -gpu-metrics, its DCGM exporters (repeatable, each a
// comma-separated list), and -gpu-hourly-cost.
type GPUFlags struct {
	list string // every -gpu-metrics, joined by commas
	// HourlyCost is -gpu-hourly-cost: a GPU's price for an hour, in
	// dollars.
	HourlyCost float64
}

// simExporter is -gpu-metrics's name for the built-in simulator's
// exporter.
const simExporter = "sim"

// Register defines the flags on fs.
func (g *GPUFlags) Register(fs *flag.FlagSet) {
	fs.Func("gpu-metrics", "the DCGM exporters of the server's GPUs, comma-separated or repeated, one a node, each once (dcgm-exporter: http://NODE:9400/metrics), "+
		"read about once a second for each window's GPU energy, mean power, tokens per joule and joules per token; "+
		"'"+simExporter+"': the built-in simulator's (its power model); in a sharded run, the leader reads them", func(v string) error {
		if g.list != "" {
			v = g.list + "," + v
		}
		g.list = v
		return nil
	})
	fs.Float64Var(&g.HourlyCost, "gpu-hourly-cost", 0, "a GPU's price for an hour, in dollars, for the cost of a million output tokens (with -gpu-metrics, which counts the GPUs)")
}

// Set reports whether -gpu-metrics was given.
func (g *GPUFlags) Set() bool { return g.list != "" }

// Check refuses flags that cannot work, with url the server's (-url).
func (g *GPUFlags) Check(url string) error {
	switch h := g.HourlyCost; {
	case !(h >= 0) || math.IsInf(h, 0):
		return fmt.Errorf("-gpu-hourly-cost %v: give a price in dollars, 0 or more", h)
	case h > 0 && g.list == "":
		return errors.New("-gpu-hourly-cost is one GPU's price: give -gpu-metrics too, which counts the GPUs")
	case g.list == simExporter && url != "":
		return errors.New("-gpu-metrics " + simExporter + " reads the built-in simulator's GPUs: it needs no -url")
	case g.list != simExporter && slices.Contains(strings.Split(g.list, ","), simExporter):
		return errors.New("-gpu-metrics " + simExporter + " reads the built-in simulator's GPUs, and goes alone")
	}
	if g.list != simExporter {
		if _, err := dcgm.ParseURLs(g.list); err != nil {
			return fmt.Errorf("-gpu-metrics: %w", err)
		}
	}
	return nil
}

// URLs returns the exporters' URLs, nil without -gpu-metrics. The
// simulator's is at simBase (its URL without /v1), "" when the command
// runs none.
func (g *GPUFlags) URLs(simBase string) ([]string, error) {
	if g.list == simExporter {
		if simBase == "" {
			return nil, errors.New("-gpu-metrics " + simExporter + " reads the built-in simulator's GPUs: it needs no -url")
		}
		return []string{strings.TrimSuffix(strings.TrimRight(simBase, "/"), "/v1") + "/dcgm/metrics"}, nil
	}
	urls, err := dcgm.ParseURLs(g.list)
	if err != nil {
		return nil, fmt.Errorf("-gpu-metrics: %w", err)
	}
	return urls, nil
}

// Meter returns a meter of the exporters (see URLs), read every every,
// started once it has read them all: nil without -gpu-metrics. The caller
// closes it.
func (g *GPUFlags) Meter(ctx context.Context, simBase string, every time.Duration) (*dcgm.Meter, error) {
	urls, err := g.URLs(simBase)
	if err != nil || len(urls) == 0 {
		return nil, err
	}
	m := dcgm.New(&http.Client{}, urls, every)
	if err := m.Read(ctx); err != nil {
		return nil, fmt.Errorf("-gpu-metrics: %w", err)
	}
	m.Start(ctx)
	return m, nil
}
