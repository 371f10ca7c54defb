package kubernetes

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/llmload/llmload/internal/harness/logbuffer"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
)

var onLoopback = flag.Bool("loopback", false, "run the shards on loopback even where each could have a network namespace")

// shortSpec is the matrix the test runs instead of the manifest's: flags
// appended to the pods' arguments (the last of a flag wins), which only
// pod 0 reads. Two cells of 4 and 32 streams, 3 s each.
var shortSpec = []string{"-contexts=0", "-concurrency=4,32", "-prefill=", "-duration=3s", "-max-tokens=30000",
	"-warmup-min=300ms", "-warmup-flow=700ms"}

// expand replaces $(VAR) in s with env's VAR as Kubernetes does for a
// container's arguments: an unknown variable is left as it is, $$ is $.
func expand(s string, env map[string]string) string {
	re := regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	return re.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// testFleetToken stands for the Secret's token in the tests' pods.
const testFleetToken = "dGhlIHRlc3RzJyBmbGVldCB0b2tlbg=="

// podEnv is the environment Kubernetes gives pod index of the Job: the
// container's env, with the downward API's fields resolved for that pod.
func podEnv(t *testing.T, job string, c corev1.Container, index int) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expand(e.Value, env)
		case e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == fleetSecret:
			env[e.Name] = testFleetToken // as kubectl create secret would hold it
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = fmt.Sprintf("%s-%d-%s", job, index, randomHex(t, 3)[:5])
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']":
			env[e.Name] = strconv.Itoa(index)
		default:
			t.Fatalf("env %s: the test does not know what Kubernetes would give it", e.Name)
		}
	}
	return env
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// network is where the shards run: loopback, or a network namespace and
// address of their own each, joined by a bridge.
type network interface {
	// serverAddr is where the server under test listens.
	serverAddr() string
	// shardAddr is the address of pod i (its DNS name on a cluster).
	shardAddr(i int) string
	// command runs the shard of pod i.
	command(i int, bin string, args []string) *exec.Cmd
	// ownPorts reports whether each shard has its own ports (the
	// manifest's port can be used as it is).
	ownPorts() bool
}

type loopback struct{}

func (loopback) serverAddr() string   { return "127.0.0.1:0" }
func (loopback) shardAddr(int) string { return "127.0.0.1" }
func (loopback) ownPorts() bool       { return false }
func (loopback) command(_ int, bin string, args []string) *exec.Cmd {
	return exec.Command(bin, args...)
}

// netns gives each shard a network namespace with an address of its own,
// on a bridge that the server's address is on too.
type netns struct {
	bridge string
	prefix string // the /24's first three numbers
	spaces []string
}

func (n *netns) serverAddr() string     { return n.prefix + ".1:0" }
func (n *netns) shardAddr(i int) string { return fmt.Sprintf("%s.%d", n.prefix, 10+i) }
func (n *netns) ownPorts() bool         { return true }
func (n *netns) command(i int, bin string, args []string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.spaces[i], bin}, args...)...)
}

// newNetns makes a bridge and a network namespace a shard, or says why it
// cannot: it needs root and the ip command. It removes them at the test's
// end.
func newNetns(t *testing.T, shards int) (*netns, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil, "not root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, "no ip command"
	}
	addrs, _ := exec.Command("ip", "-4", "-o", "addr").Output()
	var prefix string
	for x := 231; x < 251; x++ {
		if p := fmt.Sprintf("10.%d.%d", x, 7); !bytes.Contains(addrs, []byte(" "+p+".")) {
			prefix = p
			break
		}
	}
	if prefix == "" {
		return nil, "no free 10.x.7.0/24"
	}
	id := randomHex(t, 3)
	n := &netns{bridge: "llmbr" + id, prefix: prefix}
	run := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	t.Cleanup(func() {
		for _, s := range n.spaces {
			_ = run("netns", "del", s)
		}
		_ = run("link", "del", n.bridge)
	})
	if err := run("link", "add", n.bridge, "type", "bridge"); err != nil {
		return nil, err.Error()
	}
	steps := [][]string{{"addr", "add", prefix + ".1/24", "dev", n.bridge}, {"link", "set", n.bridge, "up"}}
	for i := range shards {
		ns := fmt.Sprintf("llmload-%s-%d", id, i)
		host, peer := fmt.Sprintf("llv%s%d", id, i), fmt.Sprintf("llp%s%d", id, i)
		n.spaces = append(n.spaces, ns)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"link", "add", host, "type", "veth", "peer", "name", peer},
			[]string{"link", "set", peer, "netns", ns},
			[]string{"link", "set", host, "master", n.bridge},
			[]string{"link", "set", host, "up"},
			[]string{"-n", ns, "addr", "add", n.shardAddr(i) + "/24", "dev", peer},
			[]string{"-n", ns, "link", "set", peer, "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"})
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			return nil, err.Error()
		}
	}
	return n, ""
}

// pacedServer sends every stream a token every 10 ms (100 tok/s a stream)
// and notes the address each request came from.
type pacedServer struct {
	*httptest.Server
	handler *loadgentest.Handler
	mu      sync.Mutex
	hosts   map[string]int
}

func newPacedServer(t *testing.T, addr string) *pacedServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	s := &pacedServer{handler: loadgentest.NewHandler(loadgentest.FastProfile()), hosts: map[string]int{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/completions") {
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			s.mu.Lock()
			s.hosts[host]++
			s.mu.Unlock()
		}
		s.handler.ServeHTTP(w, r)
	}))
	s.Server.Listener.Close()
	s.Server.Listener = ln
	s.Start()
	t.Cleanup(func() {
		s.handler.Close()
		s.Close()
	})
	return s
}

func (s *pacedServer) clientHosts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for h, n := range s.hosts {
		out[h] = n
	}
	return out
}

// TestShardsFromTheManifest starts one process a pod of the Job, each
// with the environment and arguments the manifest gives that pod
// (JOB_COMPLETION_INDEX and the pod's name as Kubernetes sets them, $(VAR)
// expanded as Kubernetes expands it), and checks the merged run: every
// cell measured by every shard, 100 tok/s a stream within 3%, 10 ms
// between tokens, and the results in pod 0's log and on its volume.
//
// What a machine is not a cluster changes, and only that: the server's
// URL and model are the test's simulated server; the leader's DNS name is
// its address; the results volume is a temporary directory; the
// manifest's matrix is replaced by a short one (shortSpec). As root with
// the ip command, each shard has a network namespace and an address of its
// own, on a bridge the test makes and removes, so the shards are separate
// hosts as on separate nodes and keep the manifest's port; otherwise they
// share loopback, and the leader listens on a free port.
func TestShardsFromTheManifest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the image's binary and runs one process a pod")
	}
	m := loadManifests(t)
	c := m.container(t)
	shards := int(*m.job.Spec.Completions)
	var nw network = loopback{}
	if *onLoopback {
		t.Log("the shards share loopback: -loopback")
	} else if n, why := newNetns(t, shards); n != nil {
		nw = n
	} else {
		t.Logf("the shards share loopback: %s", why)
	}
	bin := buildBinary(t)
	srv := newPacedServer(t, nw.serverAddr())
	volume := t.TempDir()

	leaderURL, err := url.Parse(func() string { e, _ := envValue(c, "LLMLOAD_LEADER"); return e.Value }())
	require.NoError(t, err)
	port := leaderURL.Port()
	if !nw.ownPorts() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		_, port, _ = net.SplitHostPort(ln.Addr().String())
		ln.Close()
	}
	leaderURL.Host = net.JoinHostPort(nw.shardAddr(0), port)

	procs := make([]*exec.Cmd, shards)
	logs := make([]*logbuffer.Buffer, shards)
	names := make([]string, shards)
	var leaderOut bytes.Buffer
	for i := range shards {
		env := podEnv(t, m.job.Name, c, i)
		names[i] = env["POD_NAME"]
		env["LLMLOAD_URL"] = srv.URL + "/v1"
		env["LLMLOAD_MODEL"] = loadgentest.DefaultModel
		env["LLMLOAD_LEADER"] = leaderURL.String()
		var args []string
		for _, a := range c.Args {
			a = expand(a, env)
			if strings.HasPrefix(a, "-listen=") && !nw.ownPorts() {
				a = "-listen=" + net.JoinHostPort(nw.shardAddr(0), port)
			}
			for _, vm := range c.VolumeMounts {
				if v, ok := strings.CutPrefix(a, "-results="+vm.MountPath); ok {
					a = "-results=" + volume + v
				}
			}
			args = append(args, a)
		}
		args = append(args, shortSpec...)
		cmd := nw.command(i, bin, args)
		cmd.Env = nil
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		logs[i] = &logbuffer.Buffer{}
		cmd.Stderr = logs[i]
		if i == 0 {
			cmd.Stdout = &leaderOut
		}
		require.NoError(t, cmd.Start())
		procs[i] = cmd
		t.Cleanup(func() { cmd.Process.Kill() })
	}
	status := make([]error, shards)
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { status[i] = p.Wait() })
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(2 * time.Minute):
		for _, p := range procs {
			p.Process.Kill()
		}
		<-waited
		t.Fatalf("the shards did not finish in 2 minutes; pod 0:\n%s", logs[0].String())
	}
	for i, err := range status {
		assert.NoError(t, err, "pod %d exits 0, as a Job's pods must for it to complete:\n%s", i, logs[i].String())
	}

	res, err := matrix.LoadFile(filepath.Join(volume, "matrix-results.json"))
	require.NoError(t, err, "the results on pod 0's volume")
	fromLog, err := matrix.ReadResults(&leaderOut)
	require.NoError(t, err, "the results in pod 0's log")
	assert.Equal(t, len(res.Cells), len(fromLog.Cells))
	require.True(t, res.Complete)
	require.Len(t, res.Cells, 2)
	for _, cell := range res.Cells {
		require.NotNil(t, cell.Measurement, "%d: %s %s\n%s", cell.Concurrency, cell.Status, cell.Reason, logs[0].String())
		assert.Equal(t, matrix.Valid, cell.Status, cell.Reason)
		assert.InEpsilon(t, 100*float64(cell.Concurrency), cell.Measurement.OutputTokensPerSec, 0.03, "%d streams over %d shards", cell.Concurrency, shards)
		assert.InDelta(t, 10, cell.Measurement.TBT.P50, 0.3)
		require.Len(t, cell.Measurement.Shards, shards)
		got := map[string]bool{}
		tokens := 0
		for _, s := range cell.Measurement.Shards {
			assert.Empty(t, s.Lost)
			got[s.Name] = true
			tokens += s.OutputTokens
		}
		assert.Equal(t, cell.Measurement.OutputTokens, tokens)
		for _, name := range names[1:] {
			assert.True(t, got[name], "follower %s in the cell: %v", name, got)
		}
	}
	hosts := srv.clientHosts()
	t.Logf("the server saw streams from %v", hosts)
	if _, ok := nw.(*netns); ok {
		assert.Len(t, hosts, shards, "every shard a host of its own: %v", hosts)
		for i := range shards {
			assert.Positive(t, hosts[nw.shardAddr(i)], "streams from pod %d's address", i)
		}
	}
}
