package headless

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunDumpsTheDOM(t *testing.T) {
	browser := Find()
	if browser == "" {
		t.Skipf("no headless Chromium on PATH (looked for %s)", strings.Join(Names, ", "))
	}
	page := filepath.Join(t.TempDir(), "p.html")
	require.NoError(t, os.WriteFile(page, []byte(`<!DOCTYPE html><p id="x">a</p>`), 0o600))
	dom, err := Run(t.Context(), browser, t.TempDir(), "--dump-dom", "file://"+page)
	require.NoError(t, err)
	assert.Contains(t, string(dom), `<p id="x">a</p>`)
}

func TestRunSaysWhatFailed(t *testing.T) {
	_, err := Run(t.Context(), filepath.Join(t.TempDir(), "no-such-browser"), t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no-such-browser")
}
