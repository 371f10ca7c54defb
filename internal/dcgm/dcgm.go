// Package dcgm reads the GPUs' power, energy, utilization and memory from
// NVIDIA's DCGM exporter (dcgm-exporter) while a run goes on, and gives
// what a window of it drew: the difference of each GPU's energy counter
// where it publishes one, its power integrated over time where not,
// summed over every GPU of every exporter, each GPU once. Readings that
// are not finite or implausible are dropped and counted, and noted in
// the window's figures, none of which is ever other than a finite
// number.
package dcgm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/llmload/llmload/internal/background"
	"github.com/llmload/llmload/internal/promtext"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/metrics"
)

// The DCGM exporter's metric names, and their units.
const (
	powerName  = "DCGM_FI_DEV_POWER_USAGE"              // W, a gauge
	energyName = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" // mJ since boot, a counter
	utilName   = "DCGM_FI_DEV_GPU_UTIL"                 // %, a gauge
	memoryName = "DCGM_FI_DEV_FB_USED"                  // MiB, a gauge
)

// ErrNoPower is the error of a reading or a window without the power or
// the energy of any GPU.
var ErrNoPower = errors.New("dcgm: no GPU's " + energyName + " or " + powerName +
	": point -gpu-metrics at a DCGM exporter's /metrics (dcgm-exporter listens on :9400)")

// point is one GPU's figures at one time; NaN where the exporter gave
// none.
type point struct {
	at                            time.Time
	energy, power, util, memoryMB float64
}

// maxWatts bounds a GPU's plausible power: the largest accelerators draw
// about 1.2 kW; a reading past this, or below 0, is the exporter's fault,
// and a window's figures would be false with it.
const maxWatts = 5000

// drops counts the readings a meter dropped, non-finite (NaN, ±Inf) or
// implausible (see drops.add), and keeps the first of them to show.
type drops struct {
	nonFinite, implausible int
	first                  string
}

// add counts the reading of name by GPU id, value v, if it is to be
// dropped, and reports whether it is.
func (d *drops) add(name, id string, v float64) bool {
	why := ""
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		d.nonFinite++
		why = "not a finite number"
	case v < 0:
		d.implausible++
		why = "below 0"
	case name == powerName && v > maxWatts:
		d.implausible++
		why = fmt.Sprintf("above %d W, more than a GPU draws", maxWatts)
	case name == utilName && v > 100:
		d.implausible++
		why = "above 100%"
	default:
		return false
	}
	if d.first == "" {
		d.first = fmt.Sprintf("%s of %s is %v: %s", name, id, v, why)
	}
	return true
}

// merge adds o's counts to d's.
func (d *drops) merge(o drops) {
	d.nonFinite += o.nonFinite
	d.implausible += o.implausible
	if d.first == "" {
		d.first = o.first
	}
}

func (d drops) total() int { return d.nonFinite + d.implausible }

// String says what was dropped, for a note.
func (d drops) String() string {
	return fmt.Sprintf("%d GPU readings dropped, left out of every figure (%d not finite, %d implausible); the first: %s",
		d.total(), d.nonFinite, d.implausible, d.first)
}

// points are a reading's points, one for each GPU, keyed by the GPU's
// identity (see gpuID; key, the exporter's, where the GPU has none),
// without the readings that are not finite or implausible, counted in d.
func points(families promtext.Families, key string, at time.Time, d *drops) map[string]point {
	gpus := map[string]point{}
	for _, name := range []string{energyName, powerName, utilName, memoryName} {
		f, ok := families[name]
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			id := gpuID(m)
			if strings.HasPrefix(id, "#") {
				id = key + "/" + id // no identity but the exporter's
			}
			p, ok := gpus[id]
			if !ok {
				p = point{at: at, energy: math.NaN(), power: math.NaN(), util: math.NaN(), memoryMB: math.NaN()}
			}
			v := promtext.Value(m)
			if d.add(name, id, v) {
				gpus[id] = p
				continue
			}
			if ms := m.GetTimestampMs(); ms > 0 && (name == energyName || name == powerName && math.IsNaN(p.energy)) {
				// The exporter says when it read the energy (or, without
				// it, the power): better than when it was scraped.
				p.at = time.UnixMilli(ms)
			}
			switch name {
			case energyName:
				p.energy = v
			case powerName:
				p.power = v
			case utilName:
				p.util = v
			case memoryName:
				p.memoryMB = v
			}
			gpus[id] = p
		}
	}
	return gpus
}

// gpuID names a series' GPU: its UUID, else its host and index, else
// "#" and its index alone. The same GPU has the same name from every
// exporter that reaches it. A MIG instance's series (GPU_I_ID) are the
// GPU's own.
func gpuID(m *dto.Metric) string {
	labels := promtext.Labels(m)
	if uuid := labels["UUID"]; uuid != "" {
		return uuid
	}
	return labels["Hostname"] + "#" + labels["gpu"] // "#N" without a host: no identity
}

// readTimeout bounds one reading of an exporter.
const readTimeout = 5 * time.Second

// maxPoints bounds the points kept of each GPU: past it, every other one
// of the oldest half is dropped.
const maxPoints = 4096

// A Meter reads DCGM exporters in the background, every so often, and
// keeps each GPU's readings until a window's energy has been taken from
// them. It is safe for concurrent use. Its errors show an exporter's URL
// with the password of its user information replaced.
type Meter struct {
	client  *http.Client
	targets []target
	every   time.Duration

	mu     sync.Mutex
	gpus   map[string][]point
	err    error // the last reading's failure
	drops  drops // the readings dropped since the last window's energy
	marked chan metrics.Window

	task background.Task // the readings, from Start to Close
}

// New returns a meter of the exporters at urls (each a URL of the
// exporter's metrics, such as http://gpu-node:9400/metrics), read every
// every, not yet started. A nil client means http.DefaultClient.
func New(client *http.Client, urls []string, every time.Duration) *Meter {
	if client == nil {
		client = http.DefaultClient
	}
	targets := make([]target, len(urls))
	for i, u := range urls {
		targets[i] = target{url: u, shown: redact.URL(u), secrets: redact.New(u)}
	}
	return &Meter{client: client, targets: targets, every: every, gpus: map[string][]point{}, marked: make(chan metrics.Window, 1)}
}

// target is one exporter's URL, and what its errors show of it.
type target struct {
	url     string
	shown   string           // the URL, its password replaced
	secrets *redact.Redactor // takes its password out of an error
}

// ParseURLs splits a comma-separated list of exporters' URLs, refusing
// one that is not an http or https URL, and one given twice (the same
// after its scheme's and host's case, its default port and a trailing
// slash are set aside), whose GPUs would be counted twice.
func ParseURLs(list string) ([]string, error) {
	var urls []string
	seen := map[string]string{}
	for u := range strings.SplitSeq(list, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		parsed, err := url.Parse(u)
		if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			return nil, fmt.Errorf("%q is not a URL: give the exporter's, such as http://gpu-node:9400/metrics", shownBad(u))
		}
		n := normalURL(parsed)
		if first, ok := seen[n]; ok {
			return nil, fmt.Errorf("%s is given twice (%q and %q): give each exporter once, or its GPUs' energy is counted twice", redact.URL(n), redact.URL(first), redact.URL(u))
		}
		seen[n] = u
		urls = append(urls, u)
	}
	return urls, nil
}

// normalURL writes u as every spelling of it does: its scheme and host in
// lower case, its port spelled out, its path without a trailing slash.
func normalURL(u *url.URL) string {
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port) + path
}

// Read reads every exporter once, now, and keeps what they said. Its
// error says which exporter failed and why; a reading that gives no
// GPU's power or energy is ErrNoPower. Readings that are not finite or
// implausible are dropped and counted, for the next window's energy. A
// GPU that two exporters report (by its UUID, or its host and index) is
// kept once, from the first, and the error says so: they are the same
// exporter, given twice.
func (m *Meter) Read(ctx context.Context) error {
	got := map[string]point{}
	from := map[string]string{} // the exporter each GPU is kept from
	var dropped drops
	var dup error
	for i, e := range m.targets {
		gpus, err := m.read(ctx, e, fmt.Sprint(i), &dropped)
		if err != nil {
			m.setErr(err)
			return err
		}
		for k, p := range gpus {
			if math.IsNaN(p.energy) && math.IsNaN(p.power) {
				continue
			}
			if first, ok := from[k]; ok {
				if dup == nil {
					dup = fmt.Errorf("dcgm: %s and %s report the same GPU (%s): give each exporter once, or its energy is counted twice", first, e.shown, k)
				}
				continue
			}
			got[k], from[k] = p, e.shown
		}
	}
	m.mu.Lock()
	m.drops.merge(dropped)
	m.mu.Unlock()
	if len(got) == 0 {
		err := ErrNoPower
		if dropped.total() > 0 {
			err = fmt.Errorf("%w (%s)", ErrNoPower, dropped)
		}
		m.setErr(err)
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = dup
	for k, p := range got {
		pts := append(m.gpus[k], p)
		if len(pts) > maxPoints {
			pts = thin(pts)
		}
		m.gpus[k] = pts
	}
	return dup
}

func (m *Meter) setErr(err error) {
	m.mu.Lock()
	m.err = err
	m.mu.Unlock()
}

// thin drops every other point of the oldest half.
func thin(pts []point) []point {
	half := len(pts) / 2
	out := pts[:0:0]
	for i, p := range pts {
		if i >= half || i%2 == 0 {
			out = append(out, p)
		}
	}
	return out
}

// read reads one exporter; its points are stamped halfway through the
// request. Its errors show the exporter's URL without its password.
func (m *Meter) read(ctx context.Context, e target, key string, d *drops) (map[string]point, error) {
	gpus, err := m.get(ctx, e, key, d)
	return gpus, e.secrets.Error(err)
}

func (m *Meter) get(ctx context.Context, e target, key string, d *drops) (map[string]point, error) {
	sent := time.Now()
	families, err := promtext.Get(ctx, m.client, e.url, e.shown, readTimeout)
	if pe, ok := errors.AsType[*promtext.ParseError](err); ok {
		return nil, fmt.Errorf("dcgm: parse the exporter's metrics: %w (from %s)", pe.Err, e.shown)
	}
	if _, ok := errors.AsType[*promtext.StatusError](err); ok {
		return nil, fmt.Errorf("dcgm: %w; check -gpu-metrics", err)
	}
	if err != nil {
		return nil, fmt.Errorf("dcgm: %w", err)
	}
	return points(families, key, sent.Add(time.Since(sent)/2), d), nil
}

// Start reads the exporters every Meter.every, and at the start and the
// end of each window Mark gives, until Close or ctx ends.
func (m *Meter) Start(ctx context.Context) {
	m.task.Start(func(stop <-chan struct{}) {
		next := time.Now()
		var marks []time.Time // readings due at a window's edges, in order
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			due := next
			if len(marks) > 0 && marks[0].Before(due) {
				due = marks[0]
			}
			t.Reset(max(time.Until(due), 0))
			select {
			case <-t.C:
				_ = m.Read(ctx)
				now := time.Now()
				for len(marks) > 0 && !marks[0].After(now) {
					marks = marks[1:]
				}
				if !next.After(now) {
					next = now.Add(m.every)
				}
			case w := <-m.marked:
				marks = marks[:0]
				for _, at := range []time.Time{w.Start, w.End} {
					if !at.IsZero() {
						marks = append(marks, at)
					}
				}
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	})
}

// Close stops the readings and waits for them to end.
func (m *Meter) Close() { m.task.Stop() }

// Mark has readings taken at w's start and end, so that the window's
// energy starts and ends with readings of its own.
func (m *Meter) Mark(w metrics.Window) {
	select {
	case <-m.marked:
	default:
	}
	m.marked <- w
}

// Energy returns what the GPUs drew in w (up to now, for a window not
// yet ended), for tokens output tokens, at hourlyCost dollars a GPU an
// hour (0: no cost), reading the exporters once more if the window ends
// after the last reading. The readings before w are then forgotten.
func (m *Meter) Energy(ctx context.Context, w metrics.Window, tokens int, hourlyCost float64) (*metrics.Energy, error) {
	end := w.End
	if now := time.Now(); end.IsZero() || end.After(now) {
		end = now
	}
	if !end.After(w.Start) {
		return nil, fmt.Errorf("dcgm: the window %v–%v is empty", w.Start, end)
	}
	if m.lastBefore(end) {
		if err := m.Read(ctx); err != nil && m.lastBefore(w.Start) {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := energy(m.gpus, w.Start, end, tokens, hourlyCost)
	if err != nil && m.err != nil {
		err = fmt.Errorf("%w (the last reading: %v)", err, m.err)
	}
	if d := m.drops; d.total() > 0 {
		if e != nil {
			e.Dropped += d.total()
			e.Notes = append(e.Notes, d.String())
		} else if err != nil {
			err = fmt.Errorf("%w; %s", err, d)
		}
		m.drops = drops{}
	}
	for k, pts := range m.gpus {
		// Keep the last point before end: the next window's start.
		i := 0
		for i+1 < len(pts) && !pts[i+1].at.After(end) {
			i++
		}
		m.gpus[k] = slices.Clone(pts[i:])
	}
	return e, err
}

// lastBefore reports whether every reading was taken before t.
func (m *Meter) lastBefore(t time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, pts := range m.gpus {
		if len(pts) > 0 && !pts[len(pts)-1].at.Before(t) {
			return false
		}
	}
	return true
}

// shownBad is what an error shows of an exporter's URL that is not one:
// with "//", its password replaced (see redact.URL); without, nothing
// before its last "@", which may be a password.
func shownBad(u string) string {
	if strings.Contains(u, "//") {
		return redact.URL(u)
	}
	if at := strings.LastIndex(u, "@"); at >= 0 {
		return "…" + u[at:]
	}
	return u
}
