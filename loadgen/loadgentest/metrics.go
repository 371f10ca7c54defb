package loadgentest

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
)

// serveMetrics serves /metrics in the Prometheus text format, with vLLM's
// metric names and labels.
func (h *Handler) serveMetrics(w http.ResponseWriter, r *http.Request) {
	st := h.Stats()
	p := &h.p
	model := labelValue.Replace(p.Model)
	labels := `{engine="0",model_name="` + model + `"}`
	var b bytes.Buffer
	metric := func(name, typ, help string, v float64) {
		b.WriteString("# HELP " + name + " " + help + "\n")
		b.WriteString("# TYPE " + name + " " + typ + "\n")
		b.WriteString(name + labels + " " + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
	}
	metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", float64(st.Running))
	metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", float64(st.Waiting))
	metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", float64(st.KVBlocksUsed)/float64(st.KVBlocks))
	metric("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.", float64(st.Preemptions))
	metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", float64(st.PromptTokens))
	metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", float64(st.GenerationTokens))
	metric("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", float64(st.PrefixCacheQueries))
	metric("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", float64(st.PrefixCacheHits))

	b.WriteString("# HELP vllm:request_success_total Count of successfully processed requests.\n")
	b.WriteString("# TYPE vllm:request_success_total counter\n")
	b.WriteString(`vllm:request_success_total{engine="0",finished_reason="length",model_name="` + model + `"} ` + strconv.FormatInt(st.Finished, 10) + "\n")

	hl := `engine="0",model_name="` + model + `"`
	e := h.eng
	e.histMu.Lock()
	e.ttft.write(&b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", hl)
	e.itl.write(&b, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", hl)
	e.e2e.write(&b, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", hl)
	e.queueTime.write(&b, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", hl)
	e.histMu.Unlock()

	kvTokens := st.KVBlocks * p.BlockSize
	b.WriteString("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig.\n")
	b.WriteString("# TYPE vllm:cache_config_info gauge\n")
	b.WriteString(`vllm:cache_config_info{block_size="` + strconv.Itoa(p.BlockSize) +
		`",enable_prefix_caching="` + pyBool(!p.DisablePrefixCaching) +
		`",engine="0",kv_cache_max_concurrency="` + strconv.FormatFloat(float64(kvTokens)/float64(p.MaxModelLen), 'f', 2, 64) +
		`",kv_cache_size_tokens="` + strconv.Itoa(kvTokens) +
		`",num_gpu_blocks="` + strconv.Itoa(st.KVBlocks) + `"} 1` + "\n")

	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b.Bytes())
}

// labelValue escapes a label value of the text format: its backslashes,
// double quotes and line feeds.
var labelValue = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}
