import { describe, expect, it } from 'vitest';
import { loadFigure, parseEngineLoad, sampleSums } from '../../../src/agent/upstream/engine-load.js';

// Excerpts of each engine's /metrics as it serves them (names as documented by each project).
const VLLM = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.41
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 52013.0
`;
const SGLANG = `# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="Qwen/Qwen2.5-7B-Instruct",tp_rank="0"} 5.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="Qwen/Qwen2.5-7B-Instruct",tp_rank="0"} 0.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="Qwen/Qwen2.5-7B-Instruct",tp_rank="0"} 0.93
# HELP sglang:gen_throughput The generation throughput (token/s).
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{model_name="Qwen/Qwen2.5-7B-Instruct",tp_rank="0"} 412.7
`;
const LLAMACPP = `# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1024
# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.125
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 4
`;

describe('parseEngineLoad', () => {
  it("reads vLLM's running, waiting and KV cache usage", () => {
    expect(parseEngineLoad(VLLM)).toEqual({ engine: 'vllm', running: 3, waiting: 2, kvUsage: 0.41 });
  });

  it("reads SGLang's running and queued requests and token usage", () => {
    expect(parseEngineLoad(SGLANG)).toEqual({ engine: 'sglang', running: 5, waiting: 0, kvUsage: 0.93 });
  });

  it("reads llama.cpp server's processing and deferred requests and KV cache ratio", () => {
    expect(parseEngineLoad(LLAMACPP)).toEqual({ engine: 'llamacpp', running: 1, waiting: 4, kvUsage: 0.125 });
  });

  it('sums the samples of every label set and skips NaN and malformed lines', () => {
    const text = 'vllm:num_requests_running{engine="0"} 2\nvllm:num_requests_running{engine="1",note="a } b"} 3\nvllm:num_requests_waiting NaN\nnot a metric\n';
    expect(sampleSums(text).get('vllm:num_requests_running')).toBe(5);
    expect(parseEngineLoad(text)).toEqual({ engine: 'vllm', running: 5, waiting: 0, kvUsage: 0 });
  });

  it('says nothing for an exposition without any known engine', () => {
    expect(parseEngineLoad('# nothing\nprocess_cpu_seconds_total 12\n')).toBeUndefined();
  });
});

describe('loadFigure', () => {
  it('is the larger of the KV fill and the share of slots taken, at most 1', () => {
    expect(loadFigure({ engine: 'vllm', running: 3, waiting: 2, kvUsage: 0.41 }, 10)).toBe(0.5);
    expect(loadFigure({ engine: 'sglang', running: 5, waiting: 0, kvUsage: 0.93 }, 10)).toBe(0.93);
    expect(loadFigure({ engine: 'llamacpp', running: 1, waiting: 4, kvUsage: 0.125 }, 2)).toBe(1);
  });
});
