"""GPU latency: Switchyard beside PyTorch on the same GPU, in the same call.

Run on the GPU machine through bench/gpu/run_gpu_bench.sh (which finds the unpacked bundle and
makes the models). For each configuration (model, batch, precision):

  Switchyard  `switchyard run MODEL --device cuda:0 --precision P --inputs X.npz --iterations N
              --json`: median host wall time of Executable::run, which takes host inputs and
              returns host outputs (copies in and out included).
  torch       the same architecture and weights (make_models.py's builders, its .pt state
              dict), cudnn.benchmark on, TF32 off (Switchyard's fp32 is true fp32), CNNs in
              channels_last, fp16 through .half() of model and inputs:
                eager         model(x) on device inputs, CUDA-event timed
                graph         CUDA-graph replay of the same call, CUDA-event timed
                eager+copies  host fp32/int64 input -> device (pageable, as our CLI copies),
                              cast, model, output -> float32 host; host wall time, like ours
  median of N timed iterations after warm-up; ratios Switchyard / torch (below 1: faster).

Also the largest |Switchyard - torch eager| / max |torch eager| on the same inputs, a sanity
check that the timed run computes the model (fp16 differs from fp16 by rounding only).

Writes the Markdown table to stdout and OUT/bench.md, one JSON line per configuration to stderr.
Exit status 1 when a Switchyard or torch run failed (the table is written all the same).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

# (model, batch, precision): resnet50 at three batches and both precisions, mobilenet_v2 and
# bert_base (seq 128) in fp16.
CONFIGS = [
    ("resnet50", 1, "fp32"), ("resnet50", 32, "fp32"), ("resnet50", 256, "fp32"),
    ("resnet50", 1, "fp16"), ("resnet50", 32, "fp16"), ("resnet50", 256, "fp16"),
    ("mobilenet_v2", 1, "fp16"), ("mobilenet_v2", 256, "fp16"),
    ("bert_base", 1, "fp16"), ("bert_base", 64, "fp16"),
]
SEQ = 128
VISION = {"resnet50", "mobilenet_v2", "squeezenet1_1"}
SEED = 4321


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--switchyard", required=True, help="the switchyard executable")
    ap.add_argument("--lib", required=True, help="LD_LIBRARY_PATH for it (the bundle's lib/)")
    ap.add_argument("--models", required=True, help="folder with <model>.onnx and <model>.pt")
    ap.add_argument("--reference", required=True, help="folder with make_models.py")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    ap.add_argument("--iters", type=int, default=30, help="timed iterations per measurement")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--configs", default="",
                    help="comma list of MODEL:BATCH:PRECISION to run (default: all)")
    ap.add_argument("--sy-timeout", type=float, default=150, help="seconds per switchyard run")
    return ap.parse_args()


def make_inputs(model, batch):
    """Host inputs as the ONNX graph declares them (float32 images; int64 ids and mask)."""
    rng = np.random.default_rng(SEED + batch)
    if model in VISION:
        return {"input": rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)}
    ids = rng.integers(0, 30522, size=(batch, SEQ), dtype=np.int64)
    mask = np.ones((batch, SEQ), dtype=np.int64)
    mask[:, -16:] = 0  # padded tail, as make_models.py's reference input
    return {"input_ids": ids, "attention_mask": mask}


def run_switchyard(args, model, precision, inputs_npz, outputs_npz):
    """Returns (median_ms, placement, error); error is None on success."""
    cmd = [args.switchyard, "run", os.path.join(args.models, f"{model}.onnx"),
           "--device", "cuda:0", "--precision", precision, "--inputs", inputs_npz,
           "--outputs", outputs_npz, "--iterations", str(args.iters), "--json"]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = args.lib + (":" + env["LD_LIBRARY_PATH"]
                                         if env.get("LD_LIBRARY_PATH") else "")
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.sy_timeout)
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {args.sy_timeout:.0f} s"
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip() or p.stdout.strip()).splitlines()[-1:] or ["no output"]
        return None, "", f"exit {p.returncode}: {tail[0][:300]}"
    j = json.loads(lines[-1])
    return float(j["median_ms"]), j.get("placement", ""), None


def profile_notes(args, worst):
    """Where the time goes in the slowest config (against torch's graph replay): one traced
    Switchyard run (kernel by kernel, a CUDA event around each node), summed by device and op."""
    ratio, label, model, precision, in_npz = worst
    trace = os.path.join(tempfile.gettempdir(), "sy_profile_trace.json")
    cmd = [args.switchyard, "run", os.path.join(args.models, f"{model}.onnx"), "--device",
           "cuda:0", "--precision", precision, "--inputs", in_npz, "--iterations", "3",
           "--trace", trace]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = args.lib + (":" + env["LD_LIBRARY_PATH"]
                                         if env.get("LD_LIBRARY_PATH") else "")
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.sy_timeout)
    if p.returncode != 0 or not os.path.exists(trace):
        return [f"- profile of {label}: the traced run failed: {p.stderr.strip()[-300:]}"]
    with open(trace) as f:
        events = json.load(f)
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    by_key, total, session = {}, 0.0, 0.0
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, dur = e.get("cat", ""), float(e.get("dur", 0))
        if cat == "Session":
            session = max(session, dur)
            continue
        args_ = e.get("args", {})
        key = (args_.get("provider", "?"), cat, args_.get("op_name", e.get("name", "?")))
        n, d = by_key.get(key, (0, 0.0))
        by_key[key] = (n + 1, d + dur)
        total += dur
    top = sorted(by_key.items(), key=lambda kv: -kv[1][1])[:12]
    out = [f"- profile of the slowest config, {label} ({ratio:.2f}x torch graph replay): one "
           f"traced run {session / 1000:.2f} ms of host time; node and copy events sum to "
           f"{total / 1000:.2f} ms (GPU nodes: device time from CUDA events; cpu nodes and "
           "copies: host time). Top entries (device, kind, op: count, ms, share):"]
    for (dev, cat, op), (n, d) in top:
        out.append(f"  - {dev} {cat} {op}: {n}, {d / 1000:.3f} ms, {100 * d / max(total, 1):.0f}%")
    return out


def event_median_ms(fn, iters, warmup):
    """Median over `iters` calls of fn(), each timed alone with CUDA events (GPU idle before)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def wall_median_ms(fn, iters, warmup):
    """Median host wall time of fn() (which ends with a device-to-host copy, so it waits)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


class TorchModel:
    """make_models.py's model with its saved weights, on cuda:0 at `precision`."""

    def __init__(self, make_models, name, precision):
        self.vision = name in VISION
        self.half = precision == "fp16"
        m = make_models.build_model(name).cuda().eval()
        if self.half:
            m = m.half()
        if self.vision:
            m = m.to(memory_format=torch.channels_last)
        self.model = m

    def to_device(self, host):
        """Host tensors (float32 / int64) -> device inputs in the model's type and layout."""
        out = []
        for t in host:
            d = t.to("cuda")
            if d.is_floating_point() and self.half:
                d = d.half()
            if self.vision:
                d = d.contiguous(memory_format=torch.channels_last)
            out.append(d)
        return out

    def __call__(self, *xs):
        return self.model(*xs)


def measure_torch(tm, host, args):
    """(eager ms, graph ms, eager+copies ms, eager output as float32 numpy)."""
    with torch.inference_mode():
        dev = tm.to_device(host)
        eager = event_median_ms(lambda: tm(*dev), args.iters, args.warmup)
        reference = tm(*dev).float().cpu().numpy()

        static_in = [d.clone() for d in dev]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                tm(*static_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = tm(*static_in)
        graphed = event_median_ms(graph.replay, args.iters, args.warmup)
        del static_out, graph

        def with_copies():
            return tm(*tm.to_device(host)).float().cpu()

        copies = wall_median_ms(with_copies, args.iters, args.warmup)
    return eager, graphed, copies, reference


def fmt_ms(v):
    return "—" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.1f}")


def fmt_ratio(a, b):
    return "—" if a is None or b is None or b <= 0 else f"{a / b:.2f}"


def main():
    args = parse_args()
    os.environ["REFERENCE_MODELS"] = args.models  # make_models.py reads it at import
    sys.path.insert(0, args.reference)
    import make_models  # noqa: E402

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False

    configs = CONFIGS
    if args.configs:
        wanted = {tuple(c.split(":")) for c in args.configs.split(",")}
        configs = [c for c in CONFIGS if (c[0], str(c[1]), c[2]) in wanted]
        missing = wanted - {(c[0], str(c[1]), c[2]) for c in configs}
        if missing:
            sys.exit(f"unknown configs: {sorted(missing)}")

    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="sy_bench_")
    gpu = torch.cuda.get_device_name(0)
    header = [
        "# GPU latency: Switchyard vs PyTorch",
        "",
        f"- **GPU**: {gpu}; torch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN "
        f"{torch.backends.cudnn.version()}); {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- **Method**: median of {args.iters} timed iterations after {args.warmup} warm-up "
        "(Switchyard: `switchyard run --iterations N`, its first, preparing, iteration included "
        "in N); bert_base at seq 128. Switchyard = host wall time of run() with host "
        "inputs/outputs; torch eager / graph = CUDA events around the model call on device "
        "inputs; torch eager+copies = host wall time of pageable H2D copy + cast + model + "
        "float32 D2H copy (like-for-like with Switchyard). TF32 off; cudnn.benchmark on; CNNs "
        "channels_last. Ratio = Switchyard / torch (below 1: Switchyard faster).",
        "",
        "| config | Switchyard ms | torch eager ms | torch graph ms | torch eager+copies ms "
        "| SY/eager | SY/graph | SY/(eager+copies) | max rel diff vs torch | torch vs its fp32 "
        "| SY vs torch fp32 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    print("\n".join(header), flush=True)
    rows, notes, placed = [], [], set()
    fp32_models = {}  # model -> TorchModel at fp32: the yardstick for low-precision error
    worst = None  # (SY/graph ratio, label, model, precision, inputs npz)
    current = (None, None)
    tm = None
    for model, batch, precision in configs:
        label = f"{model} b{batch}" + (f" s{SEQ}" if model not in VISION else "") + f" {precision}"
        host_np = make_inputs(model, batch)
        in_npz = os.path.join(work, f"{model}_b{batch}.npz")
        out_npz = os.path.join(work, f"{model}_b{batch}_{precision}_out.npz")
        np.savez(in_npz, **host_np)

        sy_ms, placement, err = run_switchyard(args, model, precision, in_npz, out_npz)
        if err:
            notes.append(f"- {label}: Switchyard failed: {err}")
        elif placement and (model, precision) not in placed:
            placed.add((model, precision))
            warn = "" if "cuda:0" in placement else " — WARNING: nothing ran on cuda:0"
            notes.append(f"- {model} {precision}: Switchyard placement: {placement}{warn}")

        if current != (model, precision):
            tm = None
            torch.cuda.empty_cache()
            tm = TorchModel(make_models, model, precision)
            current = (model, precision)
        host = [torch.from_numpy(host_np[k]) for k in host_np]
        try:
            eager, graphed, copies, reference = measure_torch(tm, host, args)
        except Exception as e:  # keep going: one failing config must not lose the table
            eager = graphed = copies = reference = None
            notes.append(f"- {label}: torch failed: {type(e).__name__}: {str(e)[:300]}")

        rel = torch_lowp = sy_vs32 = None
        ref32 = None
        if precision != "fp32" and reference is not None:
            if model not in fp32_models:
                fp32_models[model] = TorchModel(make_models, model, "fp32")
            with torch.no_grad():
                ref32 = fp32_models[model](*fp32_models[model].to_device(host)).float().cpu().numpy()
            torch_lowp = float(np.abs(reference - ref32).max()) / (float(np.abs(ref32).max()) or 1.0)
        if sy_ms is not None and reference is not None and os.path.exists(out_npz):
            got = np.load(out_npz)
            sy_out = got[got.files[0]].astype(np.float32)
            if sy_out.shape == reference.shape:
                scale = float(np.abs(reference).max()) or 1.0
                rel = float(np.abs(sy_out - reference).max()) / scale
                if ref32 is not None:
                    sy_vs32 = float(np.abs(sy_out - ref32).max()) / (float(np.abs(ref32).max()) or 1.0)
        if sy_ms is not None and graphed:
            if worst is None or sy_ms / graphed > worst[0]:
                worst = (sy_ms / graphed, label, model, precision, in_npz)
            else:
                notes.append(f"- {label}: Switchyard output shape {sy_out.shape}, torch "
                             f"{reference.shape}")
        row = (f"| {label} | {fmt_ms(sy_ms)} | {fmt_ms(eager)} | {fmt_ms(graphed)} | "
               f"{fmt_ms(copies)} | {fmt_ratio(sy_ms, eager)} | {fmt_ratio(sy_ms, graphed)} | "
               f"{fmt_ratio(sy_ms, copies)} | {'—' if rel is None else f'{rel:.1e}'} | "
               f"{'—' if torch_lowp is None else f'{torch_lowp:.1e}'} | "
               f"{'—' if sy_vs32 is None else f'{sy_vs32:.1e}'} |")
        rows.append(row)
        print(row, flush=True)
        print(json.dumps({"config": label, "model": model, "batch": batch, "precision": precision,
                          "switchyard_ms": sy_ms, "torch_eager_ms": eager,
                          "torch_graph_ms": graphed, "torch_eager_copies_ms": copies,
                          "max_rel_diff": rel, "switchyard_error": err}), file=sys.stderr,
              flush=True)
        if os.path.exists(out_npz):
            os.remove(out_npz)

    if worst is not None:
        notes += profile_notes(args, worst)
    shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(header + rows + ([""] + notes if notes else [])) + "\n"
    with open(os.path.join(args.out, "bench.md"), "w") as f:
        f.write(text)
    if notes:
        print("\n".join([""] + notes))
    failed = any(" failed: " in n for n in notes)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
