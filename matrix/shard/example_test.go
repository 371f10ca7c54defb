package shard_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/llmload/llmload/loadgen"
	"github.com/llmload/llmload/loadgen/loadgentest"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/shard"
)

// A sharded matrix in one program: the leader runs the matrix and serves
// its followers; a follower (here a goroutine, usually another machine)
// joins it by URL and runs its share of every cell. Each cell's figures
// are the exact merge of both shards' parts.
func ExampleLeader() {
	srv := loadgentest.NewServer(loadgentest.FastProfile()) // 100 tok/s a stream
	defer srv.Close()
	spec := matrix.Spec{
		URL: srv.URL + "/v1", API: loadgen.Completions, MaxTokens: 10000,
		Contexts: []int{0}, Concurrency: []int{4, 6}, Prefill: []int{},
		Duration:   2 * time.Second,
		WarmupRule: &matrix.WarmupRule{Min: 300 * time.Millisecond, Flow: 500 * time.Millisecond},
	}

	token := shard.NewToken() // every shard's: the followers take it from a secret
	leader := &shard.Leader{Token: token, Spec: spec, Followers: 1}
	hs := httptest.NewServer(leader) // the address followers join
	defer hs.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	followed := make(chan error, 1)
	go func() {
		f := &shard.Follower{Token: token, Leader: hs.URL, Name: "shard-b"}
		followed <- f.Run(ctx) // until the leader's run is over
	}()

	r := &matrix.Runner{Spec: spec, Fleet: leader}
	res, err := r.Run(ctx)
	leader.Close(ctx) // tells the followers the run is over
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("follower:", <-followed)
	for _, c := range res.Cells {
		tokens := 0
		m := c.Measurement
		if m == nil {
			fmt.Println(c.Concurrency, "streams:", c.Status, c.Reason)
			continue
		}
		for _, s := range m.Shards {
			tokens += s.OutputTokens
		}
		// m.OutputTokensPerSec is the cell's total over every shard (about
		// 100 a stream here: TestShardedRunAcrossProcesses holds it to 3%).
		fmt.Printf("%d streams: %s, %d shards, shares %d+%d, shards' tokens add up: %v\n",
			c.Concurrency, c.Status, len(m.Shards), m.Shards[0].Streams, m.Shards[1].Streams, tokens == m.OutputTokens)
	}
	// Output:
	// follower: <nil>
	// 4 streams: valid, 2 shards, shares 2+2, shards' tokens add up: true
	// 6 streams: valid, 2 shards, shares 3+3, shards' tokens add up: true
}
