"""The Python asyncio client of run.sh's comparison, modelled on the
streaming loop of vLLM's benchmark client (its OpenAI completions request
function): aiohttp, the body read as it comes, each "data: " event's JSON
parsed and its arrival taken with time.perf_counter(). N streams of long
completions in a closed loop.

    python3 aiohttp_client.py URL STREAMS SECONDS MAX_TOKENS
"""
import asyncio
import json
import sys
import time

import aiohttp


async def main(url, streams, seconds, max_tokens):
    deadline = time.perf_counter() + seconds
    body = {"model": "bench", "prompt": "Write a story.", "max_tokens": max_tokens, "ignore_eos": True, "stream": True}
    counts = {"tokens": 0, "completed": 0, "failed": 0}
    timeout = aiohttp.ClientTimeout(total=6 * 60 * 60)
    connector = aiohttp.TCPConnector(limit=streams)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:

        async def one():
            times = []
            async with session.post(url + "/completions", json=body) as resp:
                async for chunk_bytes in resp.content:
                    chunk_bytes = chunk_bytes.strip()
                    if not chunk_bytes:
                        continue
                    chunk = chunk_bytes.decode("utf-8").removeprefix("data: ")
                    if chunk == "[DONE]":
                        continue
                    data = json.loads(chunk)
                    if data["choices"] and data["choices"][0].get("text"):
                        times.append(time.perf_counter())
                        counts["tokens"] += 1
            counts["completed"] += 1

        async def worker():
            while time.perf_counter() < deadline:
                try:
                    await asyncio.wait_for(one(), timeout=max(deadline - time.perf_counter(), 0.001))
                except asyncio.TimeoutError:
                    return
                except aiohttp.ClientError:
                    counts["failed"] += 1

        await asyncio.gather(*(worker() for _ in range(streams)))
    print(f"aiohttp: {counts['tokens']} tokens read, {counts['completed']} requests completed, {counts['failed']} failed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])))
