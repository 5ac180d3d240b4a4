#!/usr/bin/env python3
"""The error PyTorch itself makes on each reference model at fp16 and bf16, as the yardstick for
Switchyard's --precision: max|torch_lowp - torch_fp32| / max|torch_fp32| on the model's reference
inputs (<name>.ref.npz), on the GPU. Also the floor that no fp16/bf16 implementation can go
below: the same error for the float32 model whose weights alone were rounded to the narrow type
(every kernel computing in that type holds its weights in it), computed in float32.
Writes {model: {"fp16": e, "bf16": e, "fp16_weights": e, "bf16_weights": e}} to
$REFERENCE_MODELS/torch_precision_error.json; tests/gpu/models_gpu.cc reads it.

usage: REFERENCE_MODELS=DIR python3 torch_precision_error.py REFERENCE_DIR [MODEL...]
"""
import json
import os
import sys

import numpy as np
import torch


def main():
    models_dir = os.environ["REFERENCE_MODELS"]
    sys.path.insert(0, sys.argv[1])
    import make_models  # noqa: E402  (reads REFERENCE_MODELS at import)

    names = sys.argv[2:] or ["resnet50", "mobilenet_v2", "squeezenet1_1", "bert_base", "gpt_decoder"]
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    out = {}
    for name in names:
        ref = np.load(os.path.join(models_dir, f"{name}.ref.npz"))
        feeds = [torch.from_numpy(ref[k]).cuda() for k in ref.files if k.startswith("in.")]
        with torch.no_grad():
            model = make_models.build_model(name).cuda().eval()
            want = model(*feeds).float()
            scale = float(want.abs().max()) or 1.0
            out[name] = {}
            for precision, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
                low = make_models.build_model(name).cuda().eval().to(dtype)
                got = low(*[f.to(dtype) if f.is_floating_point() else f for f in feeds]).float()
                out[name][precision] = float((got - want).abs().max()) / scale
                rounded = make_models.build_model(name).cuda().eval()
                for p in rounded.parameters():
                    p.copy_(p.to(dtype).float())
                got = rounded(*feeds).float()
                out[name][precision + "_weights"] = float((got - want).abs().max()) / scale
        e = out[name]
        print(f"{name}: torch fp16 {e['fp16']:.2e}, bf16 {e['bf16']:.2e}; weights rounded "
              f"only: fp16 {e['fp16_weights']:.2e}, bf16 {e['bf16_weights']:.2e} "
              "(max|x - fp32| / max|fp32|)", flush=True)
    with open(os.path.join(models_dir, "torch_precision_error.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
