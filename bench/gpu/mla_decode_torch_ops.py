"""SGLang's torch ops of a DeepSeek-V3 decode step at 2 requests per rank, on one GPU.

Each op is captured 20 times (5 for the large ones) in a CUDA graph and replayed, as the
engine replays its decode graph; prints the median time per op in µs (JSON):
  bmm_uk_us    torch.bmm [128 heads, 2, 128] x [128, 128, 512] bf16 (W_UK, 16.8 MB)
  bmm_uv_us    torch.bmm [128, 2, 512] x [128, 512, 128] bf16 (W_UV, 16.8 MB)
  lm_head_us   F.linear [2, 7168] x [129280, 7168]^T bf16 (--enable-dp-lm-head, 1.85 GB)
  copy_1GiB_us a 1 GiB device copy (reference)
The W_UK/W_UV weights rotate over 20 copies so the L2 does not serve them.
Run: python3 bench/gpu/mla_decode_torch_ops.py (results: bench/serving/SOURCES.md,
"Small-batch long-context decode step, by component").
"""
import json

import torch

BF16 = torch.bfloat16
DEV = "cuda"


def graph_time_us(fn, copies=20, reps=40):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(copies):
            fn()
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(True), torch.cuda.Event(True)
    times = []
    for _ in range(reps):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / copies)
    times.sort()
    return times[len(times) // 2]


def main():
    out = {}
    turn = [0]
    w_kc = [torch.randn(128, 128, 512, device=DEV, dtype=BF16) for _ in range(20)]
    w_vc = [torch.randn(128, 512, 128, device=DEV, dtype=BF16) for _ in range(20)]
    q_nope = torch.randn(128, 2, 128, device=DEV, dtype=BF16)
    attn_out = torch.randn(128, 2, 512, device=DEV, dtype=BF16)

    def uk():
        torch.bmm(q_nope, w_kc[turn[0] % 20])
        turn[0] += 1

    def uv():
        torch.bmm(attn_out, w_vc[turn[0] % 20])
        turn[0] += 1

    out["bmm_uk_us"] = graph_time_us(uk)
    out["bmm_uv_us"] = graph_time_us(uv)
    head = torch.randn(129280, 7168, device=DEV, dtype=BF16)
    x = torch.randn(2, 7168, device=DEV, dtype=BF16)
    out["lm_head_us"] = graph_time_us(lambda: torch.nn.functional.linear(x, head), 5, 20)
    src = torch.empty(2**30, device=DEV, dtype=torch.uint8)
    dst = torch.empty_like(src)
    out["copy_1GiB_us"] = graph_time_us(lambda: dst.copy_(src), 5, 20)
    out["device"] = torch.cuda.get_device_name()
    out["torch"] = torch.__version__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
