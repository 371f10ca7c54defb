package loadgentest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// quick is the fast profile sped up tenfold: 1 ms decode steps.
func quick() Profile {
	p := FastProfile()
	p.Speed = 10
	p.TruthBytes = 0
	return p
}

// post sends body as JSON and returns the response; the caller closes it.
func post(ctx context.Context, srv *Server, path string, body any, header http.Header) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	return srv.Client().Do(req)
}

func chat(content string, maxTokens int, stream bool) map[string]any {
	body := map[string]any{
		"model":      DefaultModel,
		"messages":   []map[string]any{{"role": "user", "content": content}},
		"max_tokens": maxTokens,
		"ignore_eos": true,
	}
	if stream {
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true, "continuous_usage_stats": true}
	}
	return body
}

func completion(prompt string, maxTokens int, stream bool) map[string]any {
	body := chat("", maxTokens, stream)
	delete(body, "messages")
	body["prompt"] = prompt
	return body
}

// event is one server-sent event's data.
type event struct {
	Data string
	At   time.Time
}

// readEvents reads the data of each event until the body ends; it returns
// what it read and the error that ended it (nil at EOF).
func readEvents(r io.Reader) ([]event, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var events []event
	var data []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" {
				return events, nil
			}
			return events, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data != nil {
				events = append(events, event{Data: strings.Join(data, "\n"), At: time.Now()})
				data = nil
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

// chunk is the part of a streamed chunk the tests read.
type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Choices []struct {
		Delta struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Object  string `json:"object"`
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func decodeChunk(t *testing.T, data string) chunk {
	t.Helper()
	var c chunk
	require.NoError(t, json.Unmarshal([]byte(data), &c), "chunk %q", data)
	return c
}

// metrics scrapes /metrics, parses it with Prometheus' text parser, and
// returns each gauge's and counter's value by metric name.
func metrics(t *testing.T, srv *Server) map[string]float64 {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	out := make(map[string]float64)
	for name, f := range families {
		for _, m := range f.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				out[name] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[name] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// waitFor polls cond every millisecond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}
