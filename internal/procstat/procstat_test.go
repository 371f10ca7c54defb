package procstat_test

import (
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/llmload/llmload/internal/procstat"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// spin keeps a CPU busy for d of this thread's time, as near as the wall
// clock tells.
func spin(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	x := 0
	for start := time.Now(); time.Since(start) < d; {
		for i := range 10000 {
			x += i
		}
	}
	_ = x
}

// TestCPU: this process's CPU time grows by about the time spent busy, and
// /proc reads about the same figure for it by its pid.
func TestCPU(t *testing.T) {
	before, err := procstat.CPU(0)
	require.NoError(t, err)
	spin(200 * time.Millisecond)
	after, err := procstat.CPU(0)
	require.NoError(t, err)
	// On a shared machine the wall clock runs ahead of the CPU time, never
	// behind it: the busy loop got at most 200 ms, and at least some.
	assert.Greater(t, after-before, 20*time.Millisecond)

	if runtime.GOOS != "linux" {
		t.Skip("no /proc")
	}
	self, err := procstat.CPU(0)
	require.NoError(t, err)
	byPID, err := procstat.CPU(os.Getpid())
	require.NoError(t, err)
	again, err := procstat.CPU(0)
	require.NoError(t, err)
	// /proc counts whole 10 ms ticks, and its split into user and system
	// time lags the scheduler's count a little more.
	assert.GreaterOrEqual(t, byPID, self-50*time.Millisecond)
	assert.LessOrEqual(t, byPID, again)
}

// TestSystemCPU: the kernel's share grows with system calls, and stays a
// part of the whole.
func TestSystemCPU(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no getrusage")
	}
	before, err := procstat.SystemCPU()
	require.NoError(t, err)
	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, 1)
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		for range 1000 {
			f.ReadAt(b, 0) // a system call that does next to nothing
		}
	}
	after, err := procstat.SystemCPU()
	require.NoError(t, err)
	whole, err := procstat.CPU(0)
	require.NoError(t, err)
	assert.Greater(t, after-before, 10*time.Millisecond)
	assert.LessOrEqual(t, after, whole)
}

func TestCPUOfNoProcess(t *testing.T) {
	_, err := procstat.CPU(1 << 30) // above Linux's pid_max
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

var sink []byte

// TestRSS: touching 64 MiB raises this process's resident set by about as
// much, and /proc gives the same figure by pid.
func TestRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("no /proc: only the peak is known")
	}
	// Memory an earlier run of this test freed is given back first, else
	// the new slice reuses pages that are already resident (-count N).
	debug.FreeOSMemory()
	before, peak, err := procstat.RSS(0)
	require.NoError(t, err)
	require.False(t, peak)
	require.Positive(t, before)

	sink = make([]byte, 64<<20)
	for i := range sink {
		sink[i] = 1
	}
	after, _, err := procstat.RSS(0)
	require.NoError(t, err)
	byPID, _, err := procstat.RSS(os.Getpid())
	require.NoError(t, err)
	sink = nil

	assert.Greater(t, after-before, int64(48<<20))
	assert.InDelta(t, after, byPID, 8<<20)
}
