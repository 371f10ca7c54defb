package matrixcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/llmload/llmload/internal/cmd/cli"
	"github.com/llmload/llmload/internal/cmd/live"
	"github.com/llmload/llmload/internal/redact"
	"github.com/llmload/llmload/internal/textsafe"
	"github.com/llmload/llmload/internal/tokencount"
	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/shard"
	"github.com/llmload/llmload/metrics"
)

// ShardFlags are the flags of a sharded run: one matrix driven from
// several processes, a leader and followers (see matrix/shard).
type ShardFlags struct {
	shards      int
	listen      string
	join        string
	index       int
	name        string
	joinTimeout time.Duration
	tokenEnv    string
	leaderURL   bool
}

// Register defines the flags on fs.
func (s *ShardFlags) Register(fs *flag.FlagSet) {
	fs.IntVar(&s.shards, "shards", 0, "lead a sharded run of this many processes, this one and the followers that -join it (with -listen)")
	fs.StringVar(&s.listen, "listen", "", "the address the leader of a sharded run serves its followers on, e.g. :7070")
	fs.StringVar(&s.join, "join", "", "follow the leader at this URL (e.g. http://llmload-0.llmload:7070): run the shares of its cells, with its spec")
	fs.IntVar(&s.index, "shard-index", -1, "with -shards, -listen and -join: lead as shard 0, follow as any other (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX)")
	fs.StringVar(&s.name, "name", "", "this shard's name in the results (default: the host's name)")
	fs.DurationVar(&s.joinTimeout, "join-timeout", shard.DefaultJoinTimeout, "how long the leader waits for its followers, and a follower for its leader")
	fs.StringVar(&s.tokenEnv, "fleet-token-env", "", "name of the environment variable holding the sharded run's secret, the same on every shard (a leader without it makes one and prints it once)")
	fs.BoolVar(&s.leaderURL, "allow-leader-url", false, "a follower given -api-key-env or -header and no -url sends its key and headers to the server the leader names")
}

// token returns the fleet's token: from -fleet-token-env, or, for a leader
// without it, a new one, printed once for the followers.
func (s *ShardFlags) token(stderr io.Writer) (string, error) {
	if s.tokenEnv != "" {
		t := os.Getenv(s.tokenEnv)
		if len(t) < shard.MinTokenLen {
			return "", fmt.Errorf("-fleet-token-env %s: the variable holds %d bytes; give every shard the same secret of at least %d (such as the output of: openssl rand -base64 32)",
				s.tokenEnv, len(t), shard.MinTokenLen)
		}
		return t, nil
	}
	if s.Follows() {
		return "", errors.New("-join needs the fleet's secret: put the leader's in an environment variable and name it with -fleet-token-env")
	}
	t := shard.NewToken()
	fmt.Fprintf(stderr, "the fleet's secret, for the followers (-fleet-token-env NAME with NAME=secret; it is not printed again):\n%s\n", t)
	return t, nil
}

// Leads reports whether this process leads a sharded run.
func (s *ShardFlags) Leads() bool {
	return s.shards > 1 && (s.index <= 0 || s.join == "")
}

// Follows reports whether this process follows a leader.
func (s *ShardFlags) Follows() bool {
	return s.join != "" && (s.index > 0 || s.shards == 0)
}

// maxShards bounds -shards: more processes than a matrix of
// matrix.MaxStreams streams a shard needs for any concurrency a server
// is run at.
const maxShards = 1024

// Check refuses flags of a sharded run that cannot work together;
// leaderOnly is whether a flag only a leader takes (-compare, -render,
// -resume) was given.
func (s *ShardFlags) Check(leaderOnly bool) error {
	switch {
	case s.shards > maxShards:
		return fmt.Errorf("-shards %d: at most %d processes run one matrix", s.shards, maxShards)
	case s.shards < 0 || s.shards == 1:
		return fmt.Errorf("-shards %d: a sharded run has at least 2 shards (the leader and a follower)", s.shards)
	case s.index >= 0 && (s.shards == 0 || s.join == "" || s.listen == ""):
		return errors.New("-shard-index picks the role from -shards, -listen and -join: give all three")
	case s.index >= s.shards && s.shards > 0:
		return fmt.Errorf("-shard-index %d of -shards %d: indexes run from 0", s.index, s.shards)
	case s.shards > 1 && s.listen == "":
		return errors.New("-shards needs -listen, the address the followers join (e.g. :7070)")
	case s.join != "" && s.shards > 1 && s.index < 0:
		return errors.New("-join and -shards are a follower's and a leader's: give one, or both with -shard-index")
	case s.join != "" && leaderOnly:
		return errors.New("a follower (-join) runs the leader's cells; -compare, -render and -resume are the leader's")
	}
	if s.join != "" {
		u, err := url.Parse(s.join)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("-join %q: give the leader's URL, such as http://llmload-0.llmload:7070", s.join)
		}
	}
	return nil
}

// Lead serves the followers of a sharded run and makes them the runner's
// fleet. The function it returns tells the followers the run is over and
// stops serving them. With log nil it prints only the fleet's secret.
func (s *ShardFlags) Lead(runner *matrix.Runner, log, stderr io.Writer) (func(), error) {
	token, err := s.token(stderr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", s.listen)
	if err != nil {
		return nil, fmt.Errorf("-listen %s: %w", s.listen, err)
	}
	leader := &shard.Leader{Token: token, Spec: runner.Spec, Followers: s.shards - 1, JoinTimeout: s.joinTimeout}
	if log != nil {
		leader.Log = log
		fmt.Fprintf(log, "leading %d shards: followers join http://%s\n", s.shards, ln.Addr())
	}
	go leader.Serve(ln)
	runner.Fleet = leader
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // Close waits at most 5 s for the followers
		defer cancel()
		leader.Close(ctx)
	}, nil
}

// Follow joins the leader at -join and runs the shares of its cells on
// the server c names (or the leader's), until its run is over. With log
// nil it prints only where its streams go. With metricsListen it serves
// its metrics there, as the leader does (see internal/live).
func (s *ShardFlags) Follow(ctx context.Context, c *cli.ClientFlags, metricsListen string, log, stderr io.Writer) error {
	token, err := s.token(stderr)
	if err != nil {
		return Usage{err}
	}
	f := &shard.Follower{Token: token, Leader: s.join, Name: s.name, JoinTimeout: s.joinTimeout}
	if log != nil {
		f.Log = log
	}
	if metricsListen != "" {
		name := f.Name
		if name == "" {
			name, _ = os.Hostname() // as the leader names the follower
		}
		lm, err := live.Start(ctx, metricsListen, name, f.Log)
		if err != nil {
			return Usage{fmt.Errorf("-metrics-listen: %w", err)}
		}
		f.OnCell = func(contextTokens, streams int, g *loadgen.Generator) {
			cell := CellName(contextTokens, streams)
			lm.Track(cell, g)
			g.OnRequest = func(_ *loadgen.Request, tl *metrics.Timeline) { lm.Observe(cell, tl) }
		}
	}
	var client *loadgen.Client
	f.Client = func(spec matrix.Spec) (*loadgen.Client, error) {
		u, err := redact.Restore(spec.URL, c.URL)
		switch {
		case errors.Is(err, redact.ErrPasswordNeeded):
			return nil, fmt.Errorf("the leader's server URL has a password, which the leader does not send: give it with -url (%s)", spec.URL)
		case err != nil:
			return nil, fmt.Errorf("-url %s is not the leader's server (%s)", redact.URL(c.URL), spec.URL)
		case c.URL == "" && !s.leaderURL:
			if own := ownSecrets(c); own != "" {
				// The key and the headers go only where this shard's
				// user sent them.
				return nil, fmt.Errorf("the leader names the server %s; this shard's %s goes only to a server given here: give it with -url, or allow the leader's with -allow-leader-url",
					redact.URL(spec.URL), own)
			}
		}
		whose := "given with -url"
		if c.URL == "" {
			whose = "named by the leader"
		}
		fmt.Fprintf(stderr, "sending this shard's streams to %s (%s)\n", textsafe.Line(redact.URL(u)), whose)
		if client, err = c.Client(slices.Max(append([]int{1}, spec.Concurrency...)) + 4); err != nil {
			return nil, err
		}
		client.BaseURL = u
		return client, client.Validate()
	}
	err = f.Run(ctx)
	if client != nil {
		client.CloseIdleConnections()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, shard.ErrRunOver):
		fmt.Fprintln(stderr, "matrix: the leader's run was over before this shard joined")
		return nil
	}
	return errors.New(strings.TrimPrefix(c.Redactor().Redact(err.Error()), "shard: "))
}

// ownSecrets names what of c a follower sends only to a server its user
// gave (-url), "" when nothing: the API key, and every -header, whatever
// its name (a header's name does not say whether its value is a
// credential: a tenant's id, a signed route or a session's cookie may be
// one).
func ownSecrets(c *cli.ClientFlags) string {
	var own []string
	if c.KeyEnv != "" {
		own = append(own, "API key (-api-key-env "+c.KeyEnv+")")
	}
	if names := c.Headers.String(); names != "" {
		own = append(own, "-header "+names)
	}
	return strings.Join(own, " and ")
}

// CellName labels a cell's requests and metrics: "16K × 8".
func CellName(contextTokens, streams int) string {
	return fmt.Sprintf("%s × %d", tokencount.Format(contextTokens), streams)
}
