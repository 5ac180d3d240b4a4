"""Kernel-by-kernel times of one configuration, Switchyard or PyTorch, under Nsight Compute.

Run on the GPU machine under ncu with profiling off at the start, so that only the profiled
replays count (the warm-up, the CUDA-graph capture and the model build stay outside):

  ncu --profile-from-start off --metrics gpu__time_duration.sum --print-summary per-kernel \\
      python3 bench/gpu/kernel_profile.py --side torch --config bert_base:1:fp16 \\
      --models /tmp/models --reference /tmp/sy/reference

--side torch replays torch_bench.py's model as a CUDA graph (ncu times each kernel node);
--side switchyard runs the Python package's session on device-resident inputs (the bundle's
package on PYTHONPATH, as device_resident_bench.py does). Both use the same seeded inputs.
The profiled region is --replays calls, between torch.cuda.profiler.start() and stop().
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import device_resident_bench as drb  # noqa: E402
import torch_bench as tb  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side", choices=["torch", "switchyard"], required=True)
    ap.add_argument("--config", required=True, help="MODEL:BATCH:PRECISION")
    ap.add_argument("--models", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--replays", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    model, batch, precision = args.config.split(":")
    batch = int(batch)
    os.environ["REFERENCE_MODELS"] = args.models
    sys.path.insert(0, args.reference)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    host_np = drb.make_inputs(model, batch)

    if args.side == "torch":
        import make_models  # noqa: E402
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
            for _ in range(args.warmup):
                graph.replay()
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            for _ in range(args.replays):
                graph.replay()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        return

    import switchyard as sy  # noqa: E402  (the bundle's package, on PYTHONPATH)
    session = sy.InferenceSession(os.path.join(args.models, f"{model}.onnx"),
                                  providers=["CUDAExecutionProvider"], precision=precision)
    binding = session.io_binding()
    device_inputs = {k: torch.from_numpy(v).cuda().contiguous() for k, v in host_np.items()}
    for name, t in device_inputs.items():
        binding.bind_input(name, "cuda", 0, drb.NP_OF[t.dtype], list(t.shape), t.data_ptr())
    for out in session.get_outputs():
        binding.bind_output(out.name, "cuda", 0)
    for _ in range(args.warmup):
        session.run_with_iobinding(binding)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(args.replays):
        session.run_with_iobinding(binding)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print("placement:", session.placement_summary())


if __name__ == "__main__":
    main()
