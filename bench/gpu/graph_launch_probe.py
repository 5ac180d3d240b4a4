"""Does a CUDA graph's first kernel wait for cudaGraphLaunch to return, and does a memcpy or
memset node change that? A probe behind bench/RESULTS.md's fifteenth and sixteenth measurements:
Switchyard's bert b1 replay showed its first kernel only after the launch call returned, torch's
before.

Three graphs of N tiny kernels (in-place adds on a 1024-float tensor) captured with torch:
  kernels   the N kernels alone
  memcpy    a device-to-device copy (a memcpy node) first, then the N kernels
  memset    a memset node first (torch's zero_ of a contiguous tensor is a kernel, so this uses
            cudaMemsetAsync through ctypes on the capturing stream), then the N kernels
For each: the host wall time of replay() + synchronize() (median of --iters), and under
torch.profiler the median delay from the replay call's start to the graph's first GPU activity
and the launch call's own duration.
"""
import argparse
import ctypes
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile


def build(kind, n):
    x = torch.zeros(1024, device="cuda")
    y = torch.zeros(1024, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    cudart = ctypes.CDLL("libcudart.so") if kind == "memset" else None
    with torch.cuda.stream(side):
        for _ in range(2):
            x.add_(1)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        if kind == "memcpy":
            y.copy_(x)
        elif kind == "memset":
            stream = torch.cuda.current_stream().cuda_stream
            rc = cudart.cudaMemsetAsync(ctypes.c_void_p(y.data_ptr()), 0, ctypes.c_size_t(4096),
                                        ctypes.c_void_p(stream))
            assert rc == 0, rc
        for _ in range(n):
            x.add_(1)
    return g, (x, y)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", type=int, default=120)
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    print(f"| graph | N | wall us (median) | launch call us (profiled) | to first GPU work us "
          f"(profiled) |\n|---|---:|---:|---:|---:|")
    for kind in ("kernels", "memcpy", "memset"):
        try:
            probe(kind, args)
        except Exception as e:  # keep going: a probe that fails reports why
            print(f"| {kind} | {args.kernels} | failed: {type(e).__name__}: {e} | | |", flush=True)


def probe(kind, args):
    g, keep = build(kind, args.kernels)
    for _ in range(20):
        g.replay()
    torch.cuda.synchronize()
    walls = []
    for _ in range(args.iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        g.replay()
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - t0) * 1e6)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            torch.cuda.synchronize()
            g.replay()
            torch.cuda.synchronize()
    launches, firsts = [], []
    events = [e for e in prof.events()]
    api = sorted((e.time_range.start, e.time_range.end) for e in events
                 if e.name == "cudaGraphLaunch")
    gpu = sorted(e.time_range.start for e in events
                 if e.device_type == torch.autograd.DeviceType.CUDA)
    for a0, a1 in api:
        launches.append(a1 - a0)
        later = [t for t in gpu if t >= a0]
        if later:
            firsts.append(later[0] - a0)
    med = (lambda v: f"{statistics.median(v):.1f}" if v else "—")
    print(f"| {kind} | {args.kernels} | {statistics.median(walls):.1f} | {med(launches)} | "
          f"{med(firsts)} |", flush=True)
    del g, keep


if __name__ == "__main__":
    main()
