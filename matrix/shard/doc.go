// Package shard runs one speed-test matrix from several client processes,
// on one machine or many: a [Leader] and followers ([Follower]) that join
// it over HTTP. The leader runs the [github.com/llmload/llmload/matrix]
// Runner as a single process would — discovery, prompts, the prefill
// table, every cell's scout, the server's /metrics — and gives each cell's
// streams out in shares; every shard keeps its share in flight against the
// server, and the leader merges their parts exactly into one result of the
// single-process schema ([github.com/llmload/llmload/metrics.MergeRecordings]).
//
// The protocol is JSON over HTTP, the follower always asking, so only the
// leader listens:
//
//   - POST /shard/hello: a follower asks for the leader's run, a random id
//     it signs into every request after, so that no request recorded from
//     one run passes for another's (see [Leader.Token]).
//   - POST /shard/join: a follower joins, and gets its index and the run's
//     spec (its URL without a password). A follower that joins while a
//     cell runs takes part from the next cell.
//   - POST /shard/clock: one NTP-style exchange. A follower measures its
//     clock's offset to the leader's at join and before each cell (the
//     exchange with the shortest round trip of several), and sets its
//     launch and window by it.
//   - POST /shard/poll: a long poll, at most a second, that carries the
//     follower's news (its warm-up is done) and brings the leader's: a
//     share of a cell, the window's start, a stop, the end of the run. It
//     is also the follower's heartbeat: one silent for five seconds is
//     lost.
//   - POST /shard/report: the follower's part of a cell: its recording
//     (counts and every histogram in HdrHistogram's V2 encoding with its
//     exact figures), its streams and its client's health.
//
// A cell's streams are split as evenly as possible (10 over 3 shards are
// 4, 3 and 3), launched a second ahead, warmed up as a single process's,
// and measured over one window on every shard's clock, moved by its
// offset. A follower that dies or falls silent mid-cell is dropped from
// it, which is marked partial; one that cannot reach the leader for five
// seconds stops and returns [ErrLeaderGone]. Every wait has a deadline.
package shard
