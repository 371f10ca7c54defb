package shard

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/llmload/llmload/matrix/internal/fleet"
)

// FuzzLeaderAnswers decodes what a leader sends a follower — a join's
// answer and a poll's — and checks them as the follower does: nothing
// panics, and what passes the checks is within the follower's bounds.
func FuzzLeaderAnswers(f *testing.F) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sh := fleet.Share{Seq: 1, Concurrency: 4, Streams: 2, MaxTokens: 10, Prompt: "hi", Launch: now.Add(time.Second), Duration: time.Second}
	for _, v := range []any{
		&pollResponse{Share: &sh},
		&pollResponse{Seq: 1, Window: now.Add(2 * time.Second)},
		&pollResponse{Done: true}, &pollResponse{Rejoin: "lost"},
	} {
		b, _ := json.Marshal(v)
		f.Add(b)
	}
	f.Add([]byte(`{"index":1,"spec":{"url":"http://127.0.0.1:8000/v1"},"silence":"5s"}`))
	f.Add([]byte(`{"share":{"seq":1,"streams":1000000,"concurrency":1000000,"duration_ns":1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p pollResponse
		if json.Unmarshal(b, &p) == nil && p.Share != nil && checkShare(p.Share, now) == nil {
			if p.Share.Streams < 1 || p.Share.Streams > 16384 || p.Share.Duration > maxShareTime || p.Share.WarmupTimeout > maxShareTime {
				t.Fatalf("a share beyond the bounds passed: %+v", p.Share)
			}
		}
		var j joinResponse
		if json.Unmarshal(b, &j) == nil && checkJoin(&j) == nil && time.Duration(j.Silence) > maxSilence {
			t.Fatalf("a silence of %v passed", time.Duration(j.Silence))
		}
	})
}

// FuzzFollowerRequests decodes the requests a leader takes from its
// followers; nothing panics.
func FuzzFollowerRequests(f *testing.F) {
	for _, v := range []any{
		helloRequest{Version: version},
		joinRequest{Version: version, Name: "a"},
		pollRequest{Index: 1, Seq: 2, Ready: &ready{Reason: "flowed"}, Clock: clock{Offset: 5, Error: 3}},
		reportRequest{Index: 1, Seq: 1, Part: json.RawMessage(`{"recording":{}}`)},
		clockRequest{Sent: time.Unix(1, 0)},
	} {
		b, _ := json.Marshal(v)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h helloRequest
		_ = json.Unmarshal(b, &h)
		var j joinRequest
		_ = json.Unmarshal(b, &j)
		var p pollRequest
		_ = json.Unmarshal(b, &p)
		var r reportRequest
		_ = json.Unmarshal(b, &r)
		var c clockRequest
		_ = json.Unmarshal(b, &c)
	})
}
