package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/harness/childserver"
	"github.com/llmload/llmload/loadgen/loadgentest"
)

// simStats is what the simulator child reports at /debug/soak.
type simStats struct {
	Runtime runtimeStats      `json:"runtime"`
	Engine  loadgentest.Stats `json:"engine"`
}

// serveSimulator runs the simulator with the fast profile on addr until ctx
// ends. It prints the address it listens on, then nothing else, on stdout.
// Besides the simulator's API it serves /debug/soak (its Go runtime and
// engine figures, as JSON) and /debug/pprof/.
func serveSimulator(ctx context.Context, addr string, speed float64, stdout, stderr io.Writer) int {
	if _, _, err := raiseFileLimit(); err != nil {
		fmt.Fprintf(stderr, "soak -serve: %v\n", err)
	}
	p := loadgentest.FastProfile()
	p.Speed = speed
	h := loadgentest.NewHandler(p)
	defer h.Close()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "soak -serve: %v\n", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("GET /debug/soak", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(simStats{Runtime: readRuntime(), Engine: h.Stats()})
	})
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintln(stdout, ln.Addr())

	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "soak -serve: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	h.Close() // ends the streams in flight, so Shutdown does not wait on them
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
	}
	<-errc
	return 0
}

// simulator is the simulator child process, seen from soak.
type simulator struct {
	srv *childserver.Server
	pid int
	url string // the API's base URL
	// exited is done once the child has exited.
	exited context.Context
	hc     *http.Client // for /debug/soak
}

// startSimulator starts soak's own binary as the simulator and waits for its
// address. The child outlives ctx: call stop.
func startSimulator(ctx context.Context, speed float64, stderr io.Writer) (*simulator, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("soak: cannot find its own binary to start the simulator: %w", err)
	}
	cmd := exec.Command(exe, "-serve", "127.0.0.1:0", "-speed", strconv.FormatFloat(speed, 'g', -1, 64))
	cmd.Stderr = stderr
	srv, err := childserver.Start(ctx, cmd, listening)
	if err != nil {
		return nil, fmt.Errorf("soak: the simulator did not start: %w", err)
	}
	exited, markExited := context.WithCancel(context.Background())
	go func() {
		<-srv.Done()
		markExited()
	}()
	return &simulator{
		srv:    srv,
		pid:    srv.PID,
		url:    "http://" + srv.Addr + "/v1",
		exited: exited,
		hc:     &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second},
	}, nil
}

// listening is the line the simulator prints first on its standard
// output: the address it listens on, alone.
var listening = regexp.MustCompile(`(?m)^(\S+:\d+)$`)

// exitError is the cause given to the load when the child exits before soak
// stops it.
func (s *simulator) exitError() error {
	return fmt.Errorf("soak: the simulator (pid %d) exited during the run: %v", s.pid, s.srv.Err())
}

// stop stops the child, waits for it to exit, and returns an error unless
// it exited cleanly. It may be called more than once.
func (s *simulator) stop() error {
	err := s.srv.Stop()
	s.hc.CloseIdleConnections()
	return err
}

// base is the simulator's root URL.
func (s *simulator) base() string { return strings.TrimSuffix(s.url, "/v1") }

// stats fetches the child's runtime and engine figures.
func (s *simulator) stats() (simStats, error) {
	var st simStats
	resp, err := s.hc.Get(s.base() + "/debug/soak")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("/debug/soak: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// heapProfile writes the child's heap profile to file.
func (s *simulator) heapProfile(file string) error {
	resp, err := s.hc.Get(s.base() + "/debug/pprof/heap")
	if err != nil {
		return fmt.Errorf("soak: the simulator's heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("soak: the simulator's heap profile: %s", resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("soak: the simulator's heap profile: %w", err)
	}
	return f.Close()
}
