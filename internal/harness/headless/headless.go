// Package headless runs headless Chromium for the tests that open
// llmload's HTML reports in a browser: the DOM it builds and the
// screenshot it takes.
package headless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"
)

// Names are the browsers Find looks for on PATH.
var Names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Find returns the path of a headless Chromium on PATH, or "" when there
// is none.
func Find() string {
	for _, name := range Names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Timeout bounds one run of the browser.
const Timeout = 60 * time.Second

// Run runs browser headless with args after the usual isolation flags,
// its profile in profileDir, within Timeout, and returns its standard
// output. A browser that does not finish in time is killed with every
// process it started.
func Run(ctx context.Context, browser, profileDir string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + profileDir}
	cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	killGroup(cmd)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("headless: %s did not finish within %v; stderr:\n%s", browser, Timeout, stderr.String())
	}
	if err != nil {
		return nil, fmt.Errorf("headless: %s failed: %w; stderr:\n%s", browser, err, stderr.String())
	}
	return stdout.Bytes(), nil
}
