"""Where a run's wall time goes: host API calls, GPU kernels and the gaps between them, for
Switchyard and for PyTorch's CUDA-graph replay of the same configuration, from one CUPTI trace.

Nsight Systems does not run on the lent GPU machine; torch.profiler records through CUPTI every
kernel, copy and CUDA runtime call of the process, Switchyard's included. Run on the GPU machine
with the bundle's Python package on PYTHONPATH (as device_resident_bench.py):

  python3 bench/gpu/timeline_profile.py --models /tmp/models --reference /tmp/sy/reference \\
      --config gpt_decoder:1:fp16 --runs 20 --out $OUT/timeline

For each side: --warmup calls, then --runs calls, each between torch.cuda.synchronize() and
its return (Switchyard: run_with_iobinding on device-resident inputs and outputs; torch:
graph.replay() then synchronize). Per run, medians over the runs, in microseconds:

  wall       host time of the call (the profiler's own cost included: compare sides, not
             with device_resident_bench's figures)
  to_first   from the call's start to its first GPU activity (host work and launch latency)
  gpu_busy   the union of the run's kernels, copies and memsets on the GPU
  gaps       gpu time between its first and last activity with nothing running
  tail       from the last activity's end to the call's return (completion latency)
  kernels    activities in the run; the largest gaps with the names around them

and the CUDA runtime calls of one run by total host time. Writes OUT/<side>_<config>.json
(the chrome trace) and OUT/timeline.md (the summary, also printed).
"""
import argparse
import json
import os
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import device_resident_bench as drb  # noqa: E402
import torch_bench as tb  # noqa: E402

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def run_torch(make_models, model, batch, precision, host_np, warmup, runs):
    tm = tb.TorchModel(make_models, model, precision)
    with torch.inference_mode():
        static_in = tm.to_device([torch.from_numpy(host_np[k]) for k in host_np])
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                tm(*static_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            tm(*static_in)

        def call():
            graph.replay()
            torch.cuda.synchronize()

        return trace(call, warmup, runs)


def run_switchyard(sy, path, precision, host_np, warmup, runs):
    session = sy.InferenceSession(path, providers=["CUDAExecutionProvider"], precision=precision)
    binding = session.io_binding()
    device_inputs = {k: torch.from_numpy(v).cuda().contiguous() for k, v in host_np.items()}
    for name, t in device_inputs.items():
        binding.bind_input(name, "cuda", 0, drb.NP_OF[t.dtype], list(t.shape), t.data_ptr())
    for out in session.get_outputs():
        binding.bind_output(out.name, "cuda", 0)
    result = trace(lambda: session.run_with_iobinding(binding), warmup, runs)
    result["placement"] = session.placement_summary()
    return result


def trace(call, warmup, runs):
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(runs):
            torch.cuda.synchronize()
            with record_function(f"sy_timeline_run_{i}"):
                call()
    return {"prof": prof}


def summarize(trace_path, runs):
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    windows = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                     if e.get("name", "").startswith("sy_timeline_run_") and "dur" in e)
    gpu = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in events
                 if e.get("cat") in GPU_CATS and "dur" in e)
    api = [(e["ts"], e["dur"], e["name"]) for e in events
           if e.get("cat") == "cuda_runtime" and "dur" in e]
    # A GPU activity belongs to the run whose launch call it follows: the runtime call's
    # correlation id links the two; simpler and sufficient here, its start inside the window
    # (every call returns only once its work is complete).
    per_run, gaps_named, api_totals = [], [], {}
    for k, (w0, w1) in enumerate(windows):
        acts = [a for a in gpu if w0 <= a[0] < w1]
        if not acts:
            continue
        busy, gaps, end = 0.0, 0.0, acts[0][0]
        named = []
        prev_name = "(start)"
        for a0, a1, name in acts:
            if a0 > end:
                gaps += a0 - end
                named.append((a0 - end, prev_name, name))
            busy += max(0.0, a1 - max(a0, end))
            if a1 > end:
                end, prev_name = a1, name
        per_run.append({"wall": w1 - w0, "to_first": acts[0][0] - w0, "gpu_busy": busy,
                        "gaps": gaps, "tail": w1 - end, "kernels": len(acts)})
        if k == len(windows) // 2:
            gaps_named = sorted(named, reverse=True)[:8]
            for t0, dur, name in api:
                if w0 <= t0 < w1:
                    calls, total = api_totals.get(name, (0, 0.0))
                    api_totals[name] = (calls + 1, total + dur)
    med = {key: statistics.median(r[key] for r in per_run) for key in per_run[0]} if per_run \
        else {}
    return med, gaps_named, api_totals


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", required=True, help="MODEL:BATCH:PRECISION")
    ap.add_argument("--models", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp/out"), "timeline"))
    args = ap.parse_args()
    os.environ["REFERENCE_MODELS"] = args.models
    sys.path.insert(0, args.reference)
    import make_models  # noqa: E402
    import switchyard as sy  # noqa: E402

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    lines = ["# Timeline of one run: Switchyard against torch's graph replay (µs, medians)", "",
             "| config | side | wall | to_first | gpu_busy | gaps | tail | activities |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    details = []
    for config in args.config:
        model, batch, precision = config.split(":")
        batch = int(batch)
        host_np = drb.make_inputs(model, batch)
        for side in ("torch", "switchyard"):
            if side == "torch":
                result = run_torch(make_models, model, batch, precision, host_np, args.warmup,
                                   args.runs)
            else:
                result = run_switchyard(sy, os.path.join(args.models, f"{model}.onnx"),
                                        precision, host_np, args.warmup, args.runs)
            path = os.path.join(args.out, f"{side}_{model}_b{batch}_{precision}.json")
            result["prof"].export_chrome_trace(path)
            med, gaps, api = summarize(path, args.runs)
            if not med:
                lines.append(f"| {config} | {side} | no GPU activity traced | | | | | |")
                continue
            lines.append(f"| {config} | {side} | {med['wall']:.1f} | {med['to_first']:.1f} | "
                         f"{med['gpu_busy']:.1f} | {med['gaps']:.1f} | {med['tail']:.1f} | "
                         f"{med['kernels']:.0f} |")
            details.append(f"\n## {config}, {side}" +
                           (f" ({result['placement']})" if "placement" in result else ""))
            details.append("largest gaps of the middle run (µs, after → before):")
            details += [f"- {g:.1f}: {a[:70]} → {b[:70]}" for g, a, b in gaps]
            details.append("CUDA runtime calls of the middle run (calls, total µs):")
            details += [f"- {name}: {n}, {t:.1f}" for name, (n, t) in
                        sorted(api.items(), key=lambda kv: -kv[1][1])[:12]]
            del result
            torch.cuda.empty_cache()
    text = "\n".join(lines + details) + "\n"
    print(text, flush=True)
    with open(os.path.join(args.out, "timeline.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
