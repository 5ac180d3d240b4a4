// Schemas of the shape family's layout ops: Transpose, Slice, Expand, Tile, Pad, DepthToSpace,
// SpaceToDepth, ReverseSequence, CenterCropPad.
#include <algorithm>
#include <limits>

#include "ir/checked_math.h"
#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

using ir::DType;
using ir::Type;

void register_shape_layout_schemas(SchemaRegistry& r);

namespace {

// A tensor type of the input's dtype and rank with every dim unknown (rank unknown stays so).
Type same_rank_unknown(const Type& in) {
  if (!in.has_rank()) return Type::tensor(in.dtype);
  return Type::tensor(in.dtype, ir::Shape(static_cast<size_t>(in.rank())));
}

std::vector<int64_t> normalized_axes(const InferContext& ctx, std::vector<int64_t> axes,
                                     int64_t rank) {
  // normalize_axis lets axis 0 through for rank 0 (as some ops need); these axes index dims.
  if (rank == 0 && !axes.empty()) ctx.fail("axis {} is out of range for a rank-0 input", axes[0]);
  std::vector<int64_t> seen;
  for (int64_t& a : axes) {
    a = normalize_axis(ctx, a, rank);
    if (std::find(seen.begin(), seen.end(), a) != seen.end())
      ctx.fail("axis {} appears more than once", a);
    seen.push_back(a);
  }
  return axes;
}

// Elements Slice takes from a dim of size d (the ONNX clamping rules).
int64_t slice_length(int64_t d, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += d;
  if (end < 0) end += d;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, d);
    end = std::clamp<int64_t>(end, 0, d);
    return end > start ? 1 + (end - start - 1) / step : 0;
  }
  if (d == 0) return 0;
  start = std::clamp<int64_t>(start, 0, d - 1);
  end = std::clamp<int64_t>(end, -1, d - 1);
  int64_t neg =
      step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
  return start > end ? 1 + (start - end - 1) / neg : 0;
}

void infer_transpose(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  const ir::Node& n = ctx.node();
  std::optional<std::vector<int64_t>> perm;
  if (n.has_attribute("perm")) perm = n.attr_ints("perm");
  if (!in.has_rank()) {
    ctx.set_output(0,
                   perm ? Type::tensor(in.dtype, ir::Shape(perm->size())) : Type::tensor(in.dtype));
    return;
  }
  int64_t rank = in.rank();
  if (!perm) {
    perm.emplace();
    for (int64_t i = rank - 1; i >= 0; --i) perm->push_back(i);
  }
  if (static_cast<int64_t>(perm->size()) != rank)
    ctx.fail("perm has {} entries for an input of rank {}", perm->size(), rank);
  std::vector<bool> used(static_cast<size_t>(rank), false);
  ir::Shape out;
  for (int64_t p : *perm) {
    if (p < 0 || p >= rank || used[static_cast<size_t>(p)])
      ctx.fail("perm [{}] is not a permutation of 0..{}", fmt::join(*perm, ","), rank - 1);
    used[static_cast<size_t>(p)] = true;
    out.push_back((*in.shape)[static_cast<size_t>(p)]);
  }
  ctx.set_output(0, Type::tensor(in.dtype, out));
}

void infer_slice(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  for (size_t i = 1; i < 5; ++i)
    if (ctx.has_input(i)) require_dtype(ctx, i, index_dtypes());
  auto starts = constant_ints(ctx, 1);
  auto ends = constant_ints(ctx, 2);
  std::optional<std::vector<int64_t>> axes, steps;
  bool axes_known = !ctx.has_input(3) || (axes = constant_ints(ctx, 3));
  bool steps_known = !ctx.has_input(4) || (steps = constant_ints(ctx, 4));
  if (starts && ends && starts->size() != ends->size())
    ctx.fail("starts has {} values and ends has {}", starts->size(), ends->size());
  if (!in.has_rank()) {
    ctx.set_output(0, Type::tensor(in.dtype));
    return;
  }
  int64_t rank = in.rank();
  if (!axes_known) {
    ctx.set_output(0, same_rank_unknown(in));
    return;
  }
  if (!axes) {
    size_t count = starts ? starts->size() : ends ? ends->size() : 0;
    if (!starts && !ends) {
      auto len = static_length(ctx, 1);
      if (!len) {
        ctx.set_output(0, same_rank_unknown(in));
        return;
      }
      count = static_cast<size_t>(*len);
    }
    axes.emplace();
    for (size_t i = 0; i < count; ++i) axes->push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> ax = normalized_axes(ctx, *axes, rank);
  if ((starts && starts->size() != ax.size()) || (ends && ends->size() != ax.size()))
    ctx.fail("starts/ends have {} values for {} axes", starts ? starts->size() : ends->size(),
             ax.size());
  if (steps && steps->size() != ax.size())
    ctx.fail("steps has {} values for {} axes", steps->size(), ax.size());
  if (steps)
    for (int64_t s : *steps)
      if (s == 0) ctx.fail("steps must not be zero");
  ir::Shape out = *in.shape;
  constexpr int64_t kToEnd = std::numeric_limits<int32_t>::max();
  for (size_t i = 0; i < ax.size(); ++i) {
    ir::Dim& d = out[static_cast<size_t>(ax[i])];
    if (!starts || !ends || !steps_known) {
      d = ir::Dim();
      continue;
    }
    int64_t start = (*starts)[i], end = (*ends)[i];
    int64_t step = steps ? (*steps)[i] : 1;
    if (d.is_static()) {
      d = ir::Dim(slice_length(d.value, start, end, step));
    } else {
      bool whole = (step == 1 && start == 0 && end >= kToEnd) ||
                   (step == -1 && (start == -1 || start >= kToEnd) && end <= -kToEnd);
      if (!whole) d = ir::Dim();
    }
  }
  ctx.set_output(0, Type::tensor(in.dtype, out));
}

void infer_expand(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  require_dtype(ctx, 1, {DType::Int64});
  auto shape = constant_ints(ctx, 1);
  if (shape) {
    for (int64_t v : *shape)
      if (v < 0) ctx.fail("shape has a negative dimension {}", v);
    if (!in.has_rank()) {
      ctx.set_output(0, Type::tensor(in.dtype));
      return;
    }
    ctx.set_output(
        0, Type::tensor(in.dtype, broadcast_shapes(ctx, {*in.shape, ir::make_shape(*shape)})));
    return;
  }
  auto len = static_length(ctx, 1);
  if (!in.has_rank() || !len) {
    ctx.set_output(0, Type::tensor(in.dtype));
    return;
  }
  size_t rank = std::max<size_t>(static_cast<size_t>(*len), static_cast<size_t>(in.rank()));
  ir::Shape out(rank);
  for (size_t i = 0; i < static_cast<size_t>(in.rank()); ++i) {
    const ir::Dim& d = (*in.shape)[i];
    if (d.is_static() && d.value != 1) out[rank - static_cast<size_t>(in.rank()) + i] = d;
  }
  ctx.set_output(0, Type::tensor(in.dtype, out));
}

void infer_tile(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  require_dtype(ctx, 1, {DType::Int64});
  auto repeats = constant_ints(ctx, 1);
  if (!in.has_rank() || !repeats) {
    ctx.set_output(0, same_rank_unknown(in));
    return;
  }
  if (static_cast<int64_t>(repeats->size()) != in.rank())
    ctx.fail("repeats has {} values for an input of rank {}", repeats->size(), in.rank());
  ir::Shape out = *in.shape;
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t rep = (*repeats)[i];
    if (rep < 0) ctx.fail("repeats has a negative value {}", rep);
    if (rep == 1) continue;
    out[i] = out[i].is_static() ? ir::Dim(ir::checked_mul(out[i].value, rep, "tiled size"))
                                : (rep == 0 ? ir::Dim(int64_t{0}) : ir::Dim());
  }
  ctx.set_output(0, Type::tensor(in.dtype, out));
}

void infer_pad(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  std::string mode = ctx.node().attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    ctx.fail("mode '{}' is not one of constant, reflect, edge, wrap", mode);
  require_dtype(ctx, 1, {DType::Int64});
  if (ctx.has_input(2)) {
    const Type& v = ctx.input_tensor(2);
    if (v.dtype != in.dtype && v.dtype != DType::Undefined && in.dtype != DType::Undefined)
      ctx.fail("constant_value has dtype {}, data has {}", ir::dtype_name(v.dtype),
               ir::dtype_name(in.dtype));
  }
  if (ctx.has_input(3)) require_dtype(ctx, 3, index_dtypes());
  auto pads = constant_ints(ctx, 1);
  std::optional<std::vector<int64_t>> axes;
  bool axes_known = !ctx.has_input(3) || (axes = constant_ints(ctx, 3));
  if (!in.has_rank() || !pads || !axes_known) {
    ctx.set_output(0, same_rank_unknown(in));
    return;
  }
  int64_t rank = in.rank();
  if (!axes) {
    axes.emplace();
    for (int64_t i = 0; i < rank; ++i) axes->push_back(i);
  }
  std::vector<int64_t> ax = normalized_axes(ctx, *axes, rank);
  if (pads->size() != 2 * ax.size())
    ctx.fail("pads has {} values, expected {} (2 per axis)", pads->size(), 2 * ax.size());
  ir::Shape out = *in.shape;
  for (size_t i = 0; i < ax.size(); ++i) {
    int64_t total = ir::checked_add((*pads)[i], (*pads)[i + ax.size()], "pads");
    ir::Dim& d = out[static_cast<size_t>(ax[i])];
    if (d.is_static()) {
      if (ir::checked_add(d.value, total, "padded size") < 0)
        ctx.fail("pads {} and {} shrink axis {} of size {} below zero", (*pads)[i],
                 (*pads)[i + ax.size()], ax[i], d.value);
      d = ir::Dim(d.value + total);
    } else if (total != 0) {
      d = ir::Dim();
    }
  }
  ctx.set_output(0, Type::tensor(in.dtype, out));
}

void infer_depth_to_space(InferContext& ctx, bool to_space) {
  const Type& in = ctx.input_tensor(0);
  int64_t b = ctx.node().attr_int("blocksize");
  if (b <= 0) ctx.fail("blocksize must be positive, got {}", b);
  int64_t b2 = ir::checked_mul(b, b, "blocksize^2");
  if (to_space) {
    std::string mode = ctx.node().attr_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") ctx.fail("mode '{}' is not DCR or CRD", mode);
  }
  if (!in.has_rank()) {
    ctx.set_output(0, Type::tensor(in.dtype, ir::Shape(4)));
    return;
  }
  if (in.rank() != 4) ctx.fail("input must be 4-D, got {}", in.to_string());
  ir::Shape out = *in.shape;
  auto scale = [&](ir::Dim& d, bool up, const char* what) {
    if (!d.is_static()) {
      d = ir::Dim();
    } else if (up) {
      d = ir::Dim(ir::checked_mul(d.value, b, what));
    } else {
      if (d.value % b != 0) ctx.fail("{} {} is not divisible by blocksize {}", what, d.value, b);
      d = ir::Dim(d.value / b);
    }
  };
  if (to_space) {
    if (out[1].is_static() && out[1].value % b2 != 0)
      ctx.fail("channels {} are not divisible by blocksize^2 = {}", out[1].value, b2);
    out[1] = out[1].is_static() ? ir::Dim(out[1].value / b2) : ir::Dim();
    scale(out[2], true, "height");
    scale(out[3], true, "width");
  } else {
    out[1] =
        out[1].is_static() ? ir::Dim(ir::checked_mul(out[1].value, b2, "channels")) : ir::Dim();
    scale(out[2], false, "height");
    scale(out[3], false, "width");
  }
  ctx.set_output(0, Type::tensor(in.dtype, out));
}

void infer_reverse_sequence(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  require_dtype(ctx, 1, {DType::Int64});
  int64_t batch_axis = ctx.node().attr_int("batch_axis", 1);
  int64_t time_axis = ctx.node().attr_int("time_axis", 0);
  if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) ||
      batch_axis == time_axis)
    ctx.fail("batch_axis {} and time_axis {} must be 0 and 1 in some order", batch_axis, time_axis);
  if (in.has_rank() && in.rank() < 2) ctx.fail("input must have rank >= 2, got {}", in.rank());
  const Type& lens = ctx.input_tensor(1);
  if (lens.has_rank() && lens.rank() != 1)
    ctx.fail("sequence_lens must be 1-D, got {}", lens.to_string());
  if (in.has_rank() && lens.has_rank()) {
    const ir::Dim& b = (*in.shape)[static_cast<size_t>(batch_axis)];
    const ir::Dim& l = (*lens.shape)[0];
    if (b.is_static() && l.is_static() && b.value != l.value)
      ctx.fail("sequence_lens has {} values for a batch of {}", l.value, b.value);
  }
  propagate_input(ctx, 0);
}

void infer_center_crop_pad(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  require_dtype(ctx, 1, index_dtypes());
  auto shape = constant_ints(ctx, 1);
  if (!in.has_rank()) {
    ctx.set_output(0, Type::tensor(in.dtype));
    return;
  }
  int64_t rank = in.rank();
  std::vector<int64_t> axes;
  if (ctx.node().has_attribute("axes")) {
    axes = normalized_axes(ctx, ctx.node().attr_ints("axes"), rank);
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  ir::Shape out = *in.shape;
  if (shape && shape->size() != axes.size())
    ctx.fail("shape has {} values for {} axes", shape->size(), axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    ir::Dim& d = out[static_cast<size_t>(axes[i])];
    if (!shape) {
      d = ir::Dim();
      continue;
    }
    if ((*shape)[i] < 0) ctx.fail("shape has a negative value {}", (*shape)[i]);
    d = ir::Dim((*shape)[i]);
  }
  ctx.set_output(0, Type::tensor(in.dtype, out));
}

}  // namespace

void register_shape_layout_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::Transpose, 1, 1, 1, 1, infer_transpose});
  r.add(OpSchema{OpKind::Slice, 3, 5, 1, 1, infer_slice});
  r.add(OpSchema{OpKind::Expand, 2, 2, 1, 1, infer_expand});
  r.add(OpSchema{OpKind::Tile, 2, 2, 1, 1, infer_tile});
  r.add(OpSchema{OpKind::Pad, 2, 4, 1, 1, infer_pad});
  r.add(OpSchema{OpKind::DepthToSpace, 1, 1, 1, 1,
                 [](InferContext& ctx) { infer_depth_to_space(ctx, true); }});
  r.add(OpSchema{OpKind::SpaceToDepth, 1, 1, 1, 1,
                 [](InferContext& ctx) { infer_depth_to_space(ctx, false); }});
  r.add(OpSchema{OpKind::ReverseSequence, 2, 2, 1, 1, infer_reverse_sequence});
  r.add(OpSchema{OpKind::CenterCropPad, 2, 2, 1, 1, infer_center_crop_pad});
}

}  // namespace switchyard::ops
