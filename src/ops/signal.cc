// Schemas of the signal family (see op_kinds.def): DFT, STFT, the window functions and
// MelWeightMatrix. Complex tensors carry a trailing dim of 2 (real, imag); real ones 1.
#include <algorithm>
#include <optional>
#include <string>

#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

// A scalar (or 1-element) integer constant input, when known.
std::optional<int64_t> constant_scalar(const InferContext& ctx, size_t i) {
  const ir::Tensor* t = ctx.input_constant(i);
  if (!t) return std::nullopt;
  if (t->numel() != 1)
    ctx.fail("input {} must hold one value, got shape {}", i, ir::shape_to_string(t->shape()));
  return t->scalar_as_int(0);
}

ir::DType output_datatype(const InferContext& ctx) {
  int64_t code = ctx.node().attr_int("output_datatype", 1);
  auto dt = static_cast<ir::DType>(code);
  const auto& allowed = numeric_dtypes();
  if (std::find(allowed.begin(), allowed.end(), dt) == allowed.end())
    ctx.fail("output_datatype {} is not a numeric tensor type", code);
  return dt;
}

void infer_dft(InferContext& ctx) {
  const ir::Node& n = ctx.node();
  require_bool_attr(ctx, "inverse", 0);
  require_bool_attr(ctx, "onesided", 0);
  const bool onesided = n.attr_int("onesided", 0) != 0;
  const ir::DType dtype = require_dtype(ctx, 0, float_dtypes());
  if (ctx.has_input(1)) require_dtype(ctx, 1, index_dtypes());
  if (ctx.has_input(2)) require_dtype(ctx, 2, index_dtypes());
  if (ctx.has_input(2) && n.has_attribute("axis"))
    ctx.fail("axis is given both as attribute and as input 2");
  const ir::Type& x = ctx.input_tensor(0);
  if (!x.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(dtype));
    return;
  }
  const int64_t rank = x.rank();
  if (rank < 2) ctx.fail("input has rank {}, expected at least 2", rank);
  ir::Shape out = *x.shape;
  const ir::Dim& last = out.back();
  if (last.is_static() && last.value != 1 && last.value != 2)
    ctx.fail("input's last dim is {}, expected 1 (real) or 2 (complex)", last.value);
  if (onesided && last.is_static() && last.value == 2)
    ctx.fail("onesided output needs a real input (last dim 1)");
  std::optional<int64_t> axis =
      n.has_attribute("axis") ? std::optional(n.attr_int("axis")) : std::optional<int64_t>(-2);
  if (ctx.has_input(2)) axis = constant_scalar(ctx, 2);
  out.back() = ir::Dim(2);
  if (!axis) {
    for (size_t i = 0; i + 1 < out.size(); ++i) out[i] = ir::Dim();
    ctx.set_output(0, ir::Type::tensor(dtype, out));
    return;
  }
  if (*axis < -rank || *axis > rank - 2 || *axis == -1)
    ctx.fail("axis {} is out of range for rank {} (the last dim holds real/imag)", *axis, rank);
  size_t a = static_cast<size_t>(*axis < 0 ? *axis + rank : *axis);
  ir::Dim length = out[a];
  if (ctx.has_input(1)) {
    auto l = constant_scalar(ctx, 1);
    if (l && *l <= 0) ctx.fail("dft_length {} must be positive", *l);
    length = l ? ir::Dim(*l) : ir::Dim();
  }
  out[a] = onesided ? (length.is_static() ? ir::Dim(length.value / 2 + 1) : ir::Dim()) : length;
  ctx.set_output(0, ir::Type::tensor(dtype, out));
}

void infer_stft(InferContext& ctx) {
  require_bool_attr(ctx, "onesided", 1);
  const bool onesided = ctx.node().attr_int("onesided", 1) != 0;
  const ir::DType dtype = require_dtype(ctx, 0, float_dtypes());
  require_dtype(ctx, 1, index_dtypes());
  if (ctx.has_input(2)) {
    ir::DType wt = require_dtype(ctx, 2, float_dtypes());
    if (wt != dtype && dtype != ir::DType::Undefined && wt != ir::DType::Undefined)
      ctx.fail("window dtype {} differs from signal dtype {}", ir::dtype_name(wt),
               ir::dtype_name(dtype));
  }
  if (ctx.has_input(3)) require_dtype(ctx, 3, index_dtypes());
  const ir::Type& x = ctx.input_tensor(0);
  if (x.has_rank() && x.rank() != 3)
    ctx.fail("signal has rank {}, expected 3 [batch, length, 1 or 2]", x.rank());
  ir::Dim batch, length;
  if (x.has_rank()) {
    batch = (*x.shape)[0];
    length = (*x.shape)[1];
    const ir::Dim& last = (*x.shape)[2];
    if (last.is_static() && last.value != 1 && last.value != 2)
      ctx.fail("signal's last dim is {}, expected 1 or 2", last.value);
    if (onesided && last.is_static() && last.value == 2)
      ctx.fail("onesided output needs a real signal (last dim 1)");
  }
  std::optional<int64_t> step = constant_scalar(ctx, 1);
  if (step && *step <= 0) ctx.fail("frame_step {} must be positive", *step);
  std::optional<int64_t> frame_length;
  if (ctx.has_input(3)) frame_length = constant_scalar(ctx, 3);
  if (!frame_length && ctx.has_input(2)) {
    const ir::Type& w = ctx.input_tensor(2);
    if (w.has_rank() && w.rank() != 1) ctx.fail("window has rank {}, expected 1", w.rank());
    if (w.has_rank() && (*w.shape)[0].is_static()) frame_length = (*w.shape)[0].value;
  }
  if (!ctx.has_input(2) && !ctx.has_input(3))
    ctx.fail("one of window and frame_length is required");
  if (frame_length && *frame_length <= 0)
    ctx.fail("frame_length {} must be positive", *frame_length);
  ir::Dim frames;
  if (step && frame_length && length.is_static()) {
    if (length.value < *frame_length)
      ctx.fail("signal length {} is shorter than frame_length {}", length.value, *frame_length);
    frames = ir::Dim((length.value - *frame_length) / *step + 1);
  }
  ir::Dim bins =
      frame_length ? ir::Dim(onesided ? *frame_length / 2 + 1 : *frame_length) : ir::Dim();
  ctx.set_output(0, ir::Type::tensor(dtype, ir::Shape{batch, frames, bins, 2}));
}

void infer_window(InferContext& ctx) {
  require_bool_attr(ctx, "periodic", 1);
  const ir::DType out = output_datatype(ctx);
  require_dtype(ctx, 0, index_dtypes());
  const ir::Type& s = ctx.input_tensor(0);
  if (s.has_rank() && s.rank() > 1) ctx.fail("size must be a scalar, got rank {}", s.rank());
  std::optional<int64_t> size = constant_scalar(ctx, 0);
  if (size && *size < 0) ctx.fail("size {} must not be negative", *size);
  ctx.set_output(0, ir::Type::tensor(out, ir::Shape{size ? ir::Dim(*size) : ir::Dim()}));
}

void infer_mel(InferContext& ctx) {
  const ir::DType out = output_datatype(ctx);
  for (size_t i = 0; i < 3; ++i) require_dtype(ctx, i, index_dtypes());
  require_dtype(ctx, 3, float_dtypes());
  require_dtype(ctx, 4, float_dtypes());
  std::optional<int64_t> bins = constant_scalar(ctx, 0);
  std::optional<int64_t> dft_length = constant_scalar(ctx, 1);
  if (bins && *bins <= 0) ctx.fail("num_mel_bins {} must be positive", *bins);
  if (dft_length && *dft_length <= 0) ctx.fail("dft_length {} must be positive", *dft_length);
  ctx.set_output(
      0, ir::Type::tensor(out, ir::Shape{dft_length ? ir::Dim(*dft_length / 2 + 1) : ir::Dim(),
                                         bins ? ir::Dim(*bins) : ir::Dim()}));
}

}  // namespace

void register_signal_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::DFT, 1, 3, 1, 1, infer_dft});
  r.add(OpSchema{OpKind::STFT, 2, 4, 1, 1, infer_stft});
  r.add(OpSchema{OpKind::HannWindow, 1, 1, 1, 1, infer_window});
  r.add(OpSchema{OpKind::HammingWindow, 1, 1, 1, 1, infer_window});
  r.add(OpSchema{OpKind::BlackmanWindow, 1, 1, 1, 1, infer_window});
  r.add(OpSchema{OpKind::MelWeightMatrix, 5, 5, 1, 1, infer_mel});
}

}  // namespace switchyard::ops
