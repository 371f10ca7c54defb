// The Node.js client of run.sh's comparison: N streams of long completions
// in a closed loop, each read with fetch (undici) and framed as SSE, every
// chunk's JSON parsed and its arrival taken with performance.now(), as a
// JavaScript load client does.
//
//	node node_client.mjs URL STREAMS SECONDS MAX_TOKENS
const [url, streams, seconds, maxTokens] = [process.argv[2], +process.argv[3], +process.argv[4], +process.argv[5]];
const deadline = performance.now() + seconds * 1000;
const body = JSON.stringify({model: "bench", prompt: "Write a story.", max_tokens: maxTokens, ignore_eos: true, stream: true});
let tokens = 0, completed = 0, failed = 0;

async function one(signal) {
  const resp = await fetch(url + "/completions", {method: "POST", headers: {"Content-Type": "application/json"}, body, signal});
  const decoder = new TextDecoder();
  let buf = "";
  const times = [];
  for await (const piece of resp.body) {
    const now = performance.now();
    buf += decoder.decode(piece, {stream: true});
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!event.startsWith("data: ") || event === "data: [DONE]") continue;
      const chunk = JSON.parse(event.slice(6));
      if (chunk.choices && chunk.choices.length && chunk.choices[0].text) {
        tokens++;
        times.push(now);
      }
    }
  }
  completed++;
}

async function worker(signal) {
  while (performance.now() < deadline) {
    try { await one(signal); } catch (e) { if (!signal.aborted) failed++; }
  }
}

const ctl = new AbortController();
setTimeout(() => ctl.abort(), seconds * 1000);
await Promise.all(Array.from({length: streams}, () => worker(ctl.signal)));
console.log(`node: ${tokens} tokens read, ${completed} requests completed, ${failed} failed`);
