package loadgentest

import (
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/llmload/llmload/internal/simtokens"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type timingsObject struct {
	TTFT       *float64 `json:"time_to_first_token_ms"`
	Generation *float64 `json:"generation_time_ms"`
	Queue      *float64 `json:"queue_time_ms"`
	MeanITL    *float64 `json:"mean_itl_ms"`
}

// include_metrics adds the request's timings to the last chunk of a
// stream, with or without usage, and to a whole response; without it there
// are none. They agree with the ground truth.
func TestIncludeMetrics(t *testing.T) {
	p := quick()
	p.TruthBytes = 1 << 20
	srv := NewServer(p)
	defer srv.Close()
	for _, tc := range []struct {
		name           string
		stream, usage  bool
		ask, wantFound bool
	}{
		{"stream with usage", true, true, true, true},
		{"stream without usage", true, false, true, true},
		{"whole response", false, false, true, true},
		{"not asked", true, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := completion(simtokens.Prompt(64, "m"), 8, tc.stream)
			if tc.stream && !tc.usage {
				delete(body, "stream_options")
			}
			if tc.ask {
				body["include_metrics"] = true
			}
			resp, err := post(t.Context(), srv, "/v1/completions", body, nil)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, 200, resp.StatusCode)
			var found []timingsObject
			var usages int
			if tc.stream {
				events, err := readEvents(resp.Body)
				require.NoError(t, err)
				for i, e := range events {
					if e.Data == "[DONE]" {
						continue
					}
					var c struct {
						Metrics *timingsObject  `json:"metrics"`
						Usage   json.RawMessage `json:"usage"`
					}
					require.NoError(t, json.Unmarshal([]byte(e.Data), &c), e.Data)
					if len(c.Usage) > 0 && string(c.Usage) != "null" {
						usages++
					}
					if c.Metrics != nil {
						assert.Equal(t, len(events)-2, i, "on the last chunk before [DONE]")
						found = append(found, *c.Metrics)
					}
				}
				if !tc.usage {
					assert.Zero(t, usages, "no usage asked for, none sent")
				}
			} else {
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				var c struct {
					Metrics *timingsObject `json:"metrics"`
				}
				require.NoError(t, json.Unmarshal(b, &c))
				if c.Metrics != nil {
					found = append(found, *c.Metrics)
				}
			}
			if !tc.wantFound {
				assert.Empty(t, found)
				return
			}
			require.Len(t, found, 1)
			m := found[0]
			require.NotNil(t, m.TTFT)
			require.NotNil(t, m.Queue)
			require.NotNil(t, m.Generation)
			require.NotNil(t, m.MeanITL)
			truth, ok := srv.Truth().Request(resp.Header.Get("X-Request-Id"))
			require.True(t, ok)
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			assert.InDelta(t, ms(truth.Scheduled.Sub(truth.Received)), *m.Queue, 0.001)
			if tc.stream {
				assert.InDelta(t, ms(truth.Chunks[0].Time.Sub(truth.Scheduled)), *m.TTFT, 0.001, "to the first chunk's flush")
			} else {
				assert.InDelta(t, ms(truth.FirstToken.Sub(truth.Scheduled)), *m.TTFT, 0.001, "to the engine's first token")
			}
			assert.Positive(t, *m.TTFT)
			assert.Positive(t, *m.Generation)
			assert.InDelta(t, *m.Generation/7, *m.MeanITL, 0.001, "8 tokens, 7 gaps")
		})
	}
}
