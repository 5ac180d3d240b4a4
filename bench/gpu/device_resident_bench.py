"""GPU latency with device-resident inputs and outputs on both sides: Switchyard beside PyTorch
on the same GPU, in the same process (issue 14, point 2).

Run on the GPU machine through bench/gpu/run_gpu_bench.sh, with the bundle's Python package
(scripts/gpu-bundle --python) on PYTHONPATH. For each configuration (model, batch, precision),
on the same seeded inputs, already in the GPU's memory as torch tensors:

  Switchyard  switchyard.InferenceSession(model, providers=["CUDAExecutionProvider"],
              precision=P); an IOBinding binds each input to the torch tensor's memory
              (bind_input with its data_ptr: read in place, no copy) and each output to cuda:0
              (left in device memory); host wall time of run_with_iobinding, which returns once
              its outputs are complete (torch.cuda.synchronize() before each call).
  torch       torch_bench.py's models (same architecture and weights, cudnn.benchmark, TF32
              off, CNNs channels_last, fp16 through .half()): eager and CUDA-graph replay, timed
              with CUDA events around the call on device inputs.

Median of N timed iterations after warm-up; ratio = Switchyard / torch graph replay (below 1:
Switchyard faster). Also the copies Switchyard's last run made (RunStats: 0 when nothing moved
between host and device) and the largest |Switchyard - torch eager| / max |torch eager|.
Writes the Markdown table to stdout and OUT/bench_device.md.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_bench as tb  # noqa: E402  (the torch side and the inputs, shared)

CONFIGS = tb.CONFIGS + [("gpt_decoder", 1, "fp16"), ("gpt_decoder", 16, "fp16")]
NP_OF = {torch.float32: np.float32, torch.int64: np.int64, torch.float16: np.float16}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True, help="folder with <model>.onnx and <model>.pt")
    ap.add_argument("--reference", required=True, help="folder with make_models.py")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--configs", default="",
                    help="comma list of MODEL:BATCH:PRECISION to run (default: all)")
    return ap.parse_args()


def make_inputs(model, batch):
    if model == "gpt_decoder":
        rng = np.random.default_rng(tb.SEED + batch)
        return {"input_ids": rng.integers(0, 32000, size=(batch, tb.SEQ), dtype=np.int64)}
    return tb.make_inputs(model, batch)


def measure_switchyard(sy, path, precision, device_inputs, iters, warmup):
    """(median ms, first output as float32 numpy, copies of the last run, placement)."""
    session = sy.InferenceSession(path, providers=["CUDAExecutionProvider"], precision=precision)
    binding = session.io_binding()
    for name, t in device_inputs.items():
        binding.bind_input(name, "cuda", 0, NP_OF[t.dtype], list(t.shape), t.data_ptr())
    for out in session.get_outputs():
        binding.bind_output(out.name, "cuda", 0)
    for _ in range(warmup):
        session.run_with_iobinding(binding)
    times = []
    for _ in range(iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        session.run_with_iobinding(binding)
        times.append((time.perf_counter() - t0) * 1e3)
    first = binding.get_outputs()[0]
    result = torch.from_dlpack(first).float().cpu().numpy()
    stats = session.last_run_stats()
    return statistics.median(times), result, stats.get("copies"), session.placement_summary()


def main():
    args = parse_args()
    os.environ["REFERENCE_MODELS"] = args.models
    sys.path.insert(0, args.reference)
    import make_models  # noqa: E402
    import switchyard as sy  # noqa: E402  (the bundle's package, on PYTHONPATH)

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    configs = CONFIGS
    if args.configs:
        wanted = {tuple(c.split(":")) for c in args.configs.split(",")}
        configs = [c for c in CONFIGS if (c[0], str(c[1]), c[2]) in wanted]
    header = [
        "# GPU latency, device-resident inputs and outputs: Switchyard vs PyTorch",
        "",
        f"- **GPU**: {torch.cuda.get_device_name(0)}; torch {torch.__version__}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- **Method**: bench/gpu/device_resident_bench.py; median of {args.iters} after "
        f"{args.warmup} warm-up; inputs and outputs in GPU memory on both sides (Switchyard "
        "through the Python package's IOBinding on torch's tensors: host wall time of "
        "run_with_iobinding; torch: CUDA events around the call). Ratio = Switchyard / torch.",
        "",
        "| config | Switchyard ms | torch eager ms | torch graph ms | SY/eager | SY/graph | "
        "copies | max rel diff vs torch |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    print("\n".join(header), flush=True)
    rows, notes, failed = [], [], False
    current, tm = (None, None), None
    for model, batch, precision in configs:
        label = (f"{model} b{batch}" + (f" s{tb.SEQ}" if model not in tb.VISION else "") +
                 f" {precision}")
        host_np = make_inputs(model, batch)
        host = [torch.from_numpy(host_np[k]) for k in host_np]
        if current != (model, precision):
            tm = None
            torch.cuda.empty_cache()
            tm = tb.TorchModel(make_models, model, precision)
            current = (model, precision)
        try:
            eager, graphed, _, reference = tb.measure_torch(tm, host, args)
        except Exception as e:  # keep going: one failing config must not lose the table
            eager = graphed = reference = None
            notes.append(f"- {label}: torch failed: {type(e).__name__}: {str(e)[:300]}")
        # Switchyard reads the ONNX graph's own input types (float32 images, int64 ids).
        device_inputs = {k: torch.from_numpy(v).cuda().contiguous() for k, v in host_np.items()}
        sy_ms = copies = rel = None
        try:
            sy_ms, got, copies, placement = measure_switchyard(
                sy, os.path.join(args.models, f"{model}.onnx"), precision, device_inputs,
                args.iters, args.warmup)
            if "cuda:0" not in placement:
                notes.append(f"- {label}: WARNING: nothing ran on cuda:0 ({placement})")
            if reference is not None and got.shape == reference.shape:
                rel = float(np.abs(got - reference).max()) / (float(np.abs(reference).max()) or 1)
        except Exception as e:
            failed = True
            notes.append(f"- {label}: Switchyard failed: {type(e).__name__}: {str(e)[:300]}")
        row = (f"| {label} | {tb.fmt_ms(sy_ms)} | {tb.fmt_ms(eager)} | {tb.fmt_ms(graphed)} | "
               f"{tb.fmt_ratio(sy_ms, eager)} | {tb.fmt_ratio(sy_ms, graphed)} | "
               f"{'—' if copies is None else copies} | {'—' if rel is None else f'{rel:.1e}'} |")
        rows.append(row)
        print(row, flush=True)
        del device_inputs
    if notes:
        print("\n".join([""] + notes), flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench_device.md"), "w") as f:
        f.write("\n".join(header + rows + ([""] + notes if notes else [])) + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
