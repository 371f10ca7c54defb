package capacity_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/llmload/llmload/capacity"
)

// The seed run: Qwen3.5-4B AWQ on a 12 GB RTX 3060 with an int4 KV cache.
// The hybrid model's attention block grows to 2,048 tokens so that one block
// holds one Gated DeltaNet layer's state; a 262,144-token request holds 128
// attention blocks and 2 state blocks in each of 3 linear-attention groups.
// The estimate comes with the range its terms are expected to span.
func Example() {
	m, err := capacity.LoadModel("testdata/qwen3.5-4b-awq")
	if err != nil {
		log.Fatal(err)
	}
	e, err := capacity.EstimateVLLM(m, capacity.VLLM{
		Version:              "0.32.0",
		GPUMemoryBytes:       12_627_203_850, // 11.76 GiB, an RTX 3060 12GB
		GPUMemoryUtilization: 0.94,
		KVCacheDType:         "int4_per_token_head",
		MaxModelLen:          262144,
		MaxNumSeqs:           128,
		EnablePrefixCaching:  true,
		LanguageModelOnly:    true,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m)
	fmt.Printf("block %d tokens, %d blocks, %d per request\n", e.BlockSize, e.NumBlocks, e.BlocksPerRequest)
	fmt.Printf("kv_cache_size_tokens %d, max concurrency %.2f\n", e.KVTokens, e.KVConcurrency)
	x := e.Expected
	fmt.Printf("expected %d to %d tokens (%+.1f%% … %+.1f%%)\n", x.KVTokensLow, x.KVTokensHigh, x.LowPercent, x.HighPercent)

	limits := e.Limits()
	for _, c := range []struct{ context, concurrency int }{{32768, 16}, {16384, 32}, {0, 128}, {253952, 1}} {
		v := limits.Check(c.context, c.concurrency, 8192)
		fmt.Printf("%6d × %3d: fits %-5v %s\n", c.context, c.concurrency, v.Fits, v.Reason)
	}
	// Output:
	// Qwen3_5ForConditionalGeneration, 32 layers: 8 full_attention, 24 linear_attention
	// block 2048 tokens, 364 blocks, 134 per request
	// kv_cache_size_tokens 712092, max concurrency 2.72
	// expected 608408 to 807951 tokens (-14.6% … +13.5%)
	//  32768 ×  16: fits true  within_limits
	//  16384 ×  32: fits false kv_tokens
	//      0 × 128: fits false kv_tokens
	// 253952 ×   1: fits false max_model_len
}

// A running vLLM server publishes its KV capacity on /metrics; the limits
// it does not publish stay unknown, and flags can fill them in.
func ExampleDiscoverModel() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			fmt.Fprintln(w, `vllm:cache_config_info{block_size="2048",kv_cache_size_tokens="757087",num_gpu_blocks="387"} 1.0`)
		case "/v1/models":
			fmt.Fprintln(w, `{"data":[{"id":"bench","max_model_len":262144}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	d, err := capacity.DiscoverModel(context.Background(), srv.Client(), srv.URL+"/v1", "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Engine, d.Limits.KVTokens, d.Limits.MaxModelLen, d.Limits.MaxRunning)
	fmt.Println(d.Limits.Check(0, 256, 8192).Reason)

	limits := d.Limits.Merge(capacity.Limits{MaxRunning: 128, Source: "--max-num-seqs"})
	fmt.Println(limits.Check(0, 256, 1024).Reason)
	// Output:
	// vllm 757087 262144 0
	// kv_tokens
	// max_running
}

// A server that publishes nothing gives unknown limits: nothing is predicted
// over capacity, and the verdict says why.
func ExampleLimits_Check() {
	var unknown capacity.Limits
	v := unknown.Check(131072, 64, 8192)
	fmt.Println(v.Fits, v.Reason)
	fmt.Println(v.Detail)
	// Output:
	// true limits_unknown
	// not over any known limit; unknown: kv_tokens, max_running, max_model_len
}

// A start-up log beats the memory estimate: "Available KV cache memory:
// 6.01 GiB" from a vLLM 0.24 server running Qwen3.6-35B-A3B with an fp8 KV
// cache and prefix caching (noonghunna/club-3090#652) gives back the
// server's own figures, which it logged as "GPU KV cache size: 569,878
// tokens" and "Maximum concurrency for 131,072 tokens per request: 4.35x".
func ExampleEstimateVLLM_startupLog() {
	m, err := capacity.ParseConfig([]byte(`{
	  "architectures": ["Qwen3_5MoeForConditionalGeneration"],
	  "text_config": {
	    "hidden_size": 2048, "num_hidden_layers": 40, "full_attention_interval": 4,
	    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
	    "linear_num_key_heads": 16, "linear_num_value_heads": 32,
	    "linear_key_head_dim": 128, "linear_value_head_dim": 128,
	    "linear_conv_kernel_dim": 4, "mamba_ssm_dtype": "float32",
	    "vocab_size": 248320, "max_position_embeddings": 262144, "dtype": "bfloat16"
	  }
	}`))
	if err != nil {
		log.Fatal(err)
	}
	e, err := capacity.EstimateVLLM(m, capacity.VLLM{
		Version:             "0.24.0",
		KVCacheDType:        "fp8",
		EnablePrefixCaching: true,
		MaxModelLen:         131072,
		AvailableKVBytes:    6_453_188_362, // 6.01 GiB
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d blocks of %d tokens, %d groups of %d layers\n", e.NumBlocks, e.BlockSize, len(e.Groups), e.LayersPerBlock)
	fmt.Printf("GPU KV cache size: %d tokens, maximum concurrency %.2fx\n", e.KVTokens, e.KVConcurrency)
	// Output:
	// 300 blocks of 2096 tokens, 4 groups of 10 layers
	// GPU KV cache size: 569878 tokens, maximum concurrency 4.35x
}

// WriteText shows how an estimate was derived. Here the start-up log gave
// the memory for the KV cache, so no term is estimated and the KV tokens
// have no range.
func ExampleEstimate_WriteText() {
	m, err := capacity.ParseConfig([]byte(`{
	  "architectures": ["Qwen3_5MoeForConditionalGeneration"],
	  "text_config": {
	    "hidden_size": 2048, "num_hidden_layers": 40, "full_attention_interval": 4,
	    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
	    "linear_num_key_heads": 16, "linear_num_value_heads": 32,
	    "linear_key_head_dim": 128, "linear_value_head_dim": 128,
	    "linear_conv_kernel_dim": 4, "mamba_ssm_dtype": "float32",
	    "vocab_size": 248320, "max_position_embeddings": 262144, "dtype": "bfloat16"
	  }
	}`))
	if err != nil {
		log.Fatal(err)
	}
	e, err := capacity.EstimateVLLM(m, capacity.VLLM{
		Version:             "0.24.0",
		KVCacheDType:        "fp8",
		EnablePrefixCaching: true,
		MaxModelLen:         131072,
		AvailableKVBytes:    6_453_188_362, // 6.01 GiB
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.WriteText(os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output:
	// Model      Qwen3_5MoeForConditionalGeneration, 40 layers: 10 full_attention, 30 linear_attention
	//            2 KV heads × head dim 256
	//            Gated DeltaNet: 16 key / 32 value heads × 128, conv kernel 4
	// KV cache   fp8: 1,024 bytes per token per attention layer per GPU
	// State      2,146,304 bytes per sequence per state layer (convolution 49,152 + recurrent 2,097,152)
	//
	// Memory of one GPU (vllm 0.24.0)
	//   = available for the KV cache       6.01 GiB                given
	//
	// Blocks
	//   block size           2,096 tokens, page 2,146,304 bytes per layer
	//   groups               4 of up to 10 layers: 3 linear_attention, 1 full_attention
	//   num_blocks           300 = available ÷ (2,146,304 × 10)
	//   per request          69 blocks at max_model_len 131,072 (2 + 2 + 2 + 63)
	//   kv_cache_size_tokens 569,878, max concurrency 4.35
	//                        expected exactly this: no budget term was estimated
	//                        group-aware (vLLM ≥ 0.20): int(300 ÷ 69 × 131,072) = 569,878
	//                        legacy (vLLM < 0.20): 300 ÷ 4 groups × 2,096 = 157,200
	//
	// Expected error
	//   the memory for the KV cache was given: no budget term estimated
}

// Grid predicts a whole speed-test grid before anything is sent, here
// against an estimate of 300,000 KV tokens expected between 270,000 and
// 320,000, on a server that runs 4 requests at once.
func ExampleLimits_Grid() {
	limits := capacity.Limits{KVTokens: 300_000, KVTokensLow: 270_000, KVTokensHigh: 320_000,
		MaxModelLen: 262_144, MaxRunning: 4, Source: "estimate (vllm)"}
	grid := limits.Grid([]int{0, 32 * 1024, 128 * 1024, 256 * 1024}, []int{1, 2, 4, 8}, 8192)
	if err := grid.WriteText(os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output:
	// Limits     kv_tokens 300,000 (expected 270,000–320,000), max_running 4, max_model_len 262,144, template overhead 16
	//            from estimate (vllm)
	//
	// Predicted grid: rows are context tokens, columns concurrent requests, 8,192 output tokens each
	//   context    1     2    4      8  at once
	//         0   ok    ok   ok  queue        4
	//       32K   ok    ok   ok  queue        4
	//      128K   ok  risk   KV     KV  2 (1–2)
	//      256K  len   len  len    len        0
	// at once: how many requests of the row's size run together with none queued, and the range the estimate gives; ok: fits; ok?: fits the known limits, others unknown; risk: within the estimate's range, which may hold it or not; queue: fits, more requests than run at once wait in the server's queue; KV: over the KV tokens; len: over max_model_len
}

// How many requests of a 32K-token prompt and up to 8K output tokens run at
// once on a server whose KV cache is estimated at 300,000 tokens (expected
// 270,000–320,000).
func ExampleLimits_Concurrency() {
	l := capacity.Limits{KVTokens: 300_000, KVTokensLow: 270_000, KVTokensHigh: 320_000, MaxRunning: 256, MaxModelLen: 262_144}
	c := l.Concurrency(32*1024, 8*1024)
	fmt.Printf("%d at once (%d–%d), bound by %s\n", c.Requests, c.Low, c.High, c.Limit)
	// Output:
	// 7 at once (6–7), bound by kv_tokens
}

// A report names a server by its URL, model, engine and version.
func ExampleServer_String() {
	s := capacity.Server{URL: "http://gpu:8000/v1", Model: "Qwen/Qwen3-8B", Engine: capacity.EngineVLLM, Version: "0.10.1"}
	fmt.Println(s)
	s.Version = ""
	fmt.Println(s)
	fmt.Println(capacity.Server{URL: "http://gpu:8000/v1"})
	// Output:
	// http://gpu:8000/v1 (Qwen/Qwen3-8B, vllm 0.10.1)
	// http://gpu:8000/v1 (Qwen/Qwen3-8B, vllm)
	// http://gpu:8000/v1
}
