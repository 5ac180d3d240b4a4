// The shape family (cpu shape.cc, shape_layout.cc, shape_pad.cc; cuda data.cc): the aliasing
// views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout), Shape/Size, Transpose (tiled
// and generic paths, rank 8), Concat (past one launch's inputs), Split, Slice (negative steps,
// clamping), Pad (every mode), Tile, Expand, ConstantOfShape, Range, Trilu, EyeLike and
// DepthToSpace/SpaceToDepth, for float32, float16, int64, bool and uint8 data. Movement is
// exact; cases without a reference are compared with the cpu.
#include <cmath>
#include <cstring>
#include <limits>

#include "harness/op_harness.h"

namespace switchyard::testing::harness {
namespace {

using Shape = std::vector<int64_t>;

const std::vector<DType> kDtypes = {DType::Float32, DType::Float16, DType::Int64, DType::Bool,
                                    DType::UInt8};

Attribute int_attr(const char* name, int64_t v) { return Attribute::make_int(name, v); }
Attribute ints_attr(const char* name, std::vector<int64_t> v) {
  return Attribute::make_ints(name, std::move(v));
}
Attribute string_attr(const char* name, const char* v) { return Attribute::make_string(name, v); }

Tensor data_of(DType dtype, const Shape& shape, uint64_t seed) {
  return random_any(dtype, shape, seed);
}

std::string tag(DType dtype, const Shape& shape) {
  return dtype_tag(dtype) + "/" + shape_tag(shape);
}

Reference transpose_ref(std::vector<int64_t> perm) {
  return [perm](const Inputs& in) {
    const Tensor& x = *in[0];
    const Shape& s = x.shape();
    std::vector<int64_t> p = perm;
    if (p.empty())
      for (size_t i = s.size(); i-- > 0;) p.push_back(static_cast<int64_t>(i));
    Shape out;
    for (int64_t a : p) out.push_back(s[static_cast<size_t>(a)]);
    return std::vector<Tensor>{move_elements(x, out, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> i(s.size());
      for (size_t k = 0; k < p.size(); ++k) i[static_cast<size_t>(p[k])] = o[k];
      return ravel(i, s);
    })};
  };
}

Reference concat_ref(int64_t axis) {
  return [axis](const Inputs& in) {
    const size_t a = static_cast<size_t>(normalize_axis(axis, in[0]->shape().size()));
    Shape out = in[0]->shape();
    out[a] = 0;
    std::vector<int64_t> starts;
    for (const auto& t : in) {
      starts.push_back(out[a]);
      out[a] += t->shape()[a];
    }
    Tensor y(in[0]->dtype(), out);
    const size_t size = ir::dtype_size(y.dtype());
    for (int64_t i = 0; i < y.numel(); ++i) {
      std::vector<int64_t> o = unravel(i, out);
      size_t k = 0;
      while (k + 1 < starts.size() && o[a] >= starts[k + 1]) ++k;
      while (in[k]->shape()[a] == 0) ++k;
      o[a] -= starts[k];
      std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>(i) * size,
                  static_cast<const char*>(in[k]->raw()) +
                      static_cast<size_t>(ravel(o, in[k]->shape())) * size,
                  size);
    }
    return std::vector<Tensor>{y};
  };
}

Reference tile_ref(Shape repeats) {
  return [repeats](const Inputs& in) {
    const Tensor& x = *in[0];
    Shape out = x.shape();
    for (size_t i = 0; i < out.size(); ++i) out[i] *= repeats[i];
    return std::vector<Tensor>{move_elements(x, out, [&](std::vector<int64_t> o) {
      for (size_t i = 0; i < o.size(); ++i) o[i] %= x.shape()[i];
      return ravel(o, x.shape());
    })};
  };
}

Reference expand_ref(Shape shape) {
  return [shape](const Inputs& in) {
    const Tensor& x = *in[0];
    const Shape out = broadcast_shapes({x.shape(), shape});
    const Shape& s = x.shape();
    return std::vector<Tensor>{move_elements(x, out, [&](const std::vector<int64_t>& o) {
      int64_t off = 0;
      for (size_t i = 0; i < s.size(); ++i)
        off = off * s[i] + (s[i] == 1 ? 0 : o[out.size() - s.size() + i]);
      return off;
    })};
  };
}

// DepthToSpace (DCR or CRD) and SpaceToDepth (its inverse of DCR) on [N, C, H, W].
Reference depth_space_ref(bool to_space, int64_t b, bool crd) {
  return [=](const Inputs& in) {
    const Tensor& x = *in[0];
    const Shape& s = x.shape();
    Shape out = to_space ? Shape{s[0], s[1] / (b * b), s[2] * b, s[3] * b}
                         : Shape{s[0], s[1] * b * b, s[2] / b, s[3] / b};
    return std::vector<Tensor>{move_elements(x, out, [&](const std::vector<int64_t>& o) {
      if (to_space) {
        int64_t c = o[1], h = o[2] / b, bh = o[2] % b, w = o[3] / b, bw = o[3] % b;
        int64_t ic = crd ? c * b * b + bh * b + bw : (bh * b + bw) * out[1] + c;
        return ravel({o[0], ic, h, w}, s);
      }
      int64_t c = o[1] % s[1], blk = o[1] / s[1], bh = blk / b, bw = blk % b;
      return ravel({o[0], c, o[2] * b + bh, o[3] * b + bw}, s);
    })};
  };
}

std::vector<Case> shape_cases() {
  std::vector<Case> cases;
  auto add = [&](std::string name, std::string op, Inputs inputs, std::vector<Attribute> attrs = {},
                 Reference ref = {}, int outputs = 1, std::vector<bool> constant = {}) {
    cases.push_back({.name = std::move(name),
                     .op = std::move(op),
                     .inputs = std::move(inputs),
                     .attributes = std::move(attrs),
                     .num_outputs = outputs,
                     .constant_inputs = std::move(constant),
                     .reference = std::move(ref)});
  };
  uint64_t seed = 100;
  for (DType dt : kDtypes) {
    const std::string d = dtype_tag(dt);
    Tensor x = data_of(dt, {2, 3, 4}, ++seed);
    add("Reshape/" + d + "/0,-1", "Reshape", {x, int64_tensor({0, -1})});
    add("Reshape/" + d + "/4,-1,2", "Reshape", {x, int64_tensor({4, -1, 2})});
    add("Reshape/" + d + "/1,2,1,3,2,2", "Reshape", {x, int64_tensor({1, 2, 1, 3, 2, 2})});
    Tensor empty = data_of(dt, {0, 3}, ++seed);
    add("Reshape/" + d + "/empty allowzero", "Reshape", {empty, int64_tensor({3, 0})},
        {int_attr("allowzero", 1)});
    add("Reshape/" + d + "/empty", "Reshape", {empty, int64_tensor({0, 3})});
    Tensor y = data_of(dt, {2, 1, 3, 1}, ++seed);
    for (int64_t axis : {0, 1, -1, 4})
      add(fmt::format("Flatten/{}/axis={}", d, axis), "Flatten", {y}, {int_attr("axis", axis)});
    add("Squeeze/" + d + "/all", "Squeeze", {y});
    add("Squeeze/" + d + "/-1,1", "Squeeze", {y, int64_tensor({-1, 1})});
    add("Unsqueeze/" + d + "/0,-1", "Unsqueeze", {y, int64_tensor({0, -1})});
    add("Unsqueeze/" + d + "/scalar", "Unsqueeze", {data_of(dt, {}, ++seed), int64_tensor({0})});
    add("Identity/" + d + "/2x1x3x1", "Identity", {y});
    add("Identity/" + d + "/7", "Identity", {data_of(dt, {7}, ++seed)});
  }
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
    const std::string d = dtype_tag(dt);
    Tensor x = random_tensor(dt, {3, 5, 7}, 200);
    Tensor ratio = tensor_of(DType::Float32, {}, {0.3});
    add("Dropout/" + d + "/default", "Dropout", {x});
    add("Dropout/" + d + "/not training", "Dropout", {x, ratio, bool_scalar(false)}, {}, {}, 2);
    add("Dropout/" + d + "/training ratio 0", "Dropout",
        {x, tensor_of(DType::Float32, {}, {0.0}), bool_scalar(true)}, {}, {}, 2);
    add("Dropout/" + d + "/empty", "Dropout", {random_tensor(dt, {0, 4}, 201)}, {}, {}, 2);
  }
  // Shape and Size: rank 18 needs two launches of the by-value value list.
  Shape tall(18, 1);
  tall[5] = 2;
  seed = 300;
  for (DType dt : kDtypes)
    for (const Shape& shape : {Shape{}, Shape{0, 3}, Shape{2, 3, 4, 5}, Shape{7}, tall}) {
      Tensor x = data_of(dt, shape, ++seed);
      Reference shape_ref = [](const Inputs& in) {
        return std::vector<Tensor>{int64_tensor(in[0]->shape())};
      };
      add("Shape/" + tag(dt, shape), "Shape", {x}, {}, shape_ref);
      add("Size/" + tag(dt, shape), "Size", {x}, {},
          [](const Inputs& in) { return std::vector<Tensor>{int64_scalar(in[0]->numel())}; });
      for (auto [start, end] :
           std::vector<std::pair<int64_t, int64_t>>{{1, 100}, {0, -1}, {-10, 2}, {3, 1}, {-2, -1}})
        add(fmt::format("Shape/{}/start={}/end={}", tag(dt, shape), start, end), "Shape", {x},
            {int_attr("start", start), int_attr("end", end)});
    }
  const std::vector<std::pair<Shape, std::vector<int64_t>>> transposes = {
      {{67, 45}, {}},                                        // 2-D, tiled
      {{3, 40, 33}, {0, 2, 1}},                              // batched last-two-dims, tiled
      {{2, 3, 17, 19}, {0, 2, 3, 1}},                        // NCHW -> NHWC
      {{2, 17, 19, 3}, {0, 3, 1, 2}},                        // NHWC -> NCHW
      {{2, 64, 65}, {2, 1, 0}},                              // strided batch
      {{2, 3, 4, 5, 6, 7}, {5, 0, 3, 1, 4, 2}},              // rank 6, generic
      {{2, 3, 2, 3, 2, 3, 2, 2}, {7, 6, 5, 4, 3, 2, 1, 0}},  // rank 8
      {{7}, {0}},
      {{1, 1, 5}, {2, 0, 1}},
      {{0, 3}, {1, 0}},
      {{5, 0, 4}, {2, 0, 1}},
      // A contiguous innermost dim moves in chunks of up to 16 bytes (BERT's head split).
      {{2, 5, 3, 16}, {0, 2, 1, 3}},
      {{2, 3, 5, 16}, {0, 2, 1, 3}},
      {{3, 4, 2, 6}, {1, 0, 2, 3}},
      {{2, 3, 4, 2}, {2, 0, 1, 3}},
  };
  seed = 400;
  for (DType dt : kDtypes)
    for (const auto& [shape, perm] : transposes) {
      std::vector<Attribute> attrs;
      if (!perm.empty()) attrs.push_back(ints_attr("perm", perm));
      add(fmt::format("Transpose/{}/perm={}", tag(dt, shape), shape_tag(perm)), "Transpose",
          {data_of(dt, shape, ++seed)}, attrs, transpose_ref(perm));
    }
  seed = 500;
  for (DType dt : kDtypes) {
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      Inputs ins;
      for (int64_t len : {2, 0, 3, 1}) {
        Shape s = {2, 3, 4};
        s[a] = len;
        ins.push_back(data_of(dt, s, ++seed));
      }
      add(fmt::format("Concat/{}/axis={}", dtype_tag(dt), axis), "Concat", ins,
          {int_attr("axis", axis)}, concat_ref(axis));
    }
    // More inputs than one launch takes (32), some empty.
    Inputs many;
    for (int64_t i = 0; i < 41; ++i) many.push_back(data_of(dt, {2, i % 3, 5}, ++seed));
    add("Concat/" + dtype_tag(dt) + "/41 inputs", "Concat", many, {int_attr("axis", 1)},
        concat_ref(1));
    add("Concat/" + dtype_tag(dt) + "/one input", "Concat", {data_of(dt, {6}, ++seed)},
        {int_attr("axis", 0)}, concat_ref(0));
  }
  seed = 600;
  for (DType dt : kDtypes) {
    const std::string d = dtype_tag(dt);
    Tensor x = data_of(dt, {6, 7, 4}, ++seed);
    add("Split/" + d + "/2,0,5 axis 1", "Split", {x, int64_tensor({2, 0, 5})},
        {int_attr("axis", 1)}, {}, 3);
    add("Split/" + d + "/even", "Split", {x}, {}, {}, 3);
    add("Split/" + d + "/num_outputs", "Split", {x},
        {int_attr("axis", -2), int_attr("num_outputs", 3)}, {}, 3);
    add("Split/" + d + "/1,3 axis -1", "Split", {x, int64_tensor({1, 3})}, {int_attr("axis", -1)},
        {}, 2);
    add("Split/" + d + "/empty", "Split", {data_of(dt, {0, 4}, ++seed)}, {int_attr("axis", 1)}, {},
        2);
    // GPT's fused QKV product split three ways (16-byte moves), an odd row (1-element moves).
    add("Split/" + d + "/qkv", "Split", {data_of(dt, {2, 16, 96}, ++seed)}, {int_attr("axis", -1)},
        {}, 3);
    add("Split/" + d + "/3,1,5 axis 2", "Split",
        {data_of(dt, {3, 2, 9}, ++seed), int64_tensor({3, 1, 5})}, {int_attr("axis", 2)}, {}, 3);
  }
  {  // more outputs than one launch takes (SplitChunk::kMaxOutputs = 32), some empty
    std::vector<int64_t> sizes;
    for (int64_t i = 0; i < 40; ++i) sizes.push_back(i % 3);
    add("Split/f32/40 outputs", "Split",
        {data_of(DType::Float32, {2, 39, 3}, ++seed), int64_tensor(sizes)}, {int_attr("axis", 1)},
        {}, 40);
  }
  struct SliceCase {
    Shape shape;
    std::vector<int64_t> starts, ends, axes, steps;  // empty axes/steps: omitted
  };
  const std::vector<SliceCase> slices = {
      {{5, 6, 7}, {1, -1}, {4, 100}, {}, {}},
      {{5, 6, 7}, {-1}, {-100}, {1}, {-2}},     // negative step to the front
      {{5, 6, 7}, {10}, {-10}, {-1}, {-1}},     // clamped reversed axis
      {{5, 6, 7}, {2, 0}, {2, 5}, {0, 2}, {}},  // empty result
      {{5, 6, 7}, {0, 1, 6}, {5, 6, 0}, {0, 1, 2}, {2, 3, -3}},
      {{20}, {3}, {17}, {}, {4}},
      {{2, 3, 2, 3, 2, 3}, {0, 1, -1}, {2, 3, -3}, {0, -1, 2}, {1, 1, -1}},
      {{4, 0, 3}, {0}, {2}, {0}, {}},
      {{5, 6, 7}, {4}, {-100}, {0}, {std::numeric_limits<int64_t>::min()}},  // one element
      {{6, 4, 32}, {1, 0, 8}, {5, 3, 24}, {0, 1, 2}, {}},                    // aligned inner rows
      {{6, 4, 32}, {1, 0, 1}, {5, 3, 17}, {0, 1, 2}, {}},                    // unaligned
      {{6, 4, 32}, {0, 0}, {6, 4}, {0, 1}, {2, 3}},
  };
  seed = 700;
  for (DType dt : kDtypes)
    for (size_t k = 0; k < slices.size(); ++k) {
      const SliceCase& c = slices[k];
      Inputs ins = {data_of(dt, c.shape, ++seed), int64_tensor(c.starts), int64_tensor(c.ends)};
      ins.push_back(c.axes.empty() ? std::nullopt : std::optional<Tensor>(int64_tensor(c.axes)));
      if (!c.steps.empty()) ins.push_back(int64_tensor(c.steps));
      if (c.axes.empty() && c.steps.empty()) ins.pop_back();
      add(fmt::format("Slice/{}/case {}", tag(dt, c.shape), k), "Slice", ins);
    }
  add("Slice/float32/int32 starts", "Slice",
      {data_of(DType::Float32, {5, 6}, ++seed), tensor_of(DType::Int32, {2}, {1, -2}),
       tensor_of(DType::Int32, {2}, {-1, 0}), std::nullopt, tensor_of(DType::Int32, {2}, {1, -1})});
  struct PadCase {
    Shape shape;
    std::vector<int64_t> pads, axes;  // empty axes: omitted
  };
  const std::vector<PadCase> pads = {
      {{3, 4, 5}, {1, 0, 2, 2, 1, 0}, {}},
      {{3, 4, 5}, {0, 3, 5, 1, 4, 6}, {}},    // pads longer than the axis (reflect folds back)
      {{3, 4, 5}, {2, 1, 1, 0}, {-1, 0}},     // axes input
      {{3, 4, 5}, {-1, 0, 1, 0, -1, 2}, {}},  // negative pads crop
      {{6}, {2, 3}, {}},
      {{2, 1, 3, 2, 1, 2}, {1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0}, {}},
      {{1, 3, 4}, {0, 0, 0, 0, 0, 0}, {}},
  };
  seed = 800;
  for (const char* mode : {"constant", "reflect", "edge", "wrap"})
    for (DType dt : kDtypes)
      for (size_t k = 0; k < pads.size(); ++k) {
        const PadCase& c = pads[k];
        Inputs ins = {data_of(dt, c.shape, ++seed), int64_tensor(c.pads)};
        bool constant = std::string(mode) == "constant";
        ins.push_back(constant ? std::optional<Tensor>(data_of(dt, {}, ++seed)) : std::nullopt);
        if (!c.axes.empty()) ins.push_back(int64_tensor(c.axes));
        add(fmt::format("Pad/{}/{}/case {}", mode, tag(dt, c.shape), k), "Pad", ins,
            {string_attr("mode", mode)});
      }
  for (DType dt : kDtypes) {
    add("Pad/constant/" + dtype_tag(dt) + "/empty axis", "Pad",
        {data_of(dt, {0, 3}, ++seed), int64_tensor({1, 0, 2, 1})});
    add("Pad/constant/" + dtype_tag(dt) + "/default value", "Pad",
        {data_of(dt, {2, 3}, ++seed), int64_tensor({1, 1, 0, 2})});
  }
  seed = 900;
  for (DType dt : kDtypes)
    for (const auto& [shape, repeats] :
         std::vector<std::pair<Shape, Shape>>{{{2, 3, 4}, {2, 1, 3}},
                                              {{2, 3, 4}, {1, 0, 2}},
                                              {{5}, {3}},
                                              {{1, 2, 1, 3, 2}, {2, 2, 3, 1, 2}}})
      add(fmt::format("Tile/{}/repeats={}", tag(dt, shape), shape_tag(repeats)), "Tile",
          {data_of(dt, shape, ++seed), int64_tensor(repeats)}, {}, tile_ref(repeats));
  const std::vector<DType> all_pod = {
      DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int8,
      DType::Int16,   DType::Int32,   DType::Int64,    DType::UInt8,   DType::UInt16,
      DType::UInt32,  DType::UInt64,  DType::Bool};
  seed = 1500;
  for (DType dt : all_pod)
    for (const auto& [in, shape] :
         std::vector<std::pair<Shape, Shape>>{{{3, 1}, {2, 3, 4}},
                                              {{1}, {5}},
                                              {{}, {2, 2}},
                                              {{2, 1, 4}, {3, 1, 1, 1}},
                                              {{4}, {1}},
                                              {{0, 1}, {0, 3}},
                                              {{3, 1}, {2, 3, 0}},
                                              {{1, 1, 5}, {1000003, 1, 1}}})
      add(fmt::format("Expand/{}/to={}", tag(dt, in), shape_tag(shape)), "Expand",
          {data_of(dt, in, ++seed), int64_tensor(shape)}, {}, expand_ref(shape), 1, {false, true});
  add("Expand/float32/3x1/fed shape", "Expand",
      {data_of(DType::Float32, {3, 1}, ++seed), int64_tensor({2, 3, 4})}, {},
      expand_ref({2, 3, 4}));
  // ConstantOfShape: no value (float32 zeros) and a value of each dtype.
  const std::vector<Tensor> values = {
      tensor_of(DType::Int32, {1}, {7}),       tensor_of(DType::Float16, {1}, {1.5}),
      tensor_of(DType::Float32, {1}, {-2.25}), tensor_of(DType::Bool, {1}, {1}),
      tensor_of(DType::UInt8, {1}, {200}),     tensor_of(DType::Int64, {1}, {-123456789012}),
      tensor_of(DType::Float64, {1}, {0.1}),
  };
  for (const Shape& shape : {Shape{2, 3}, Shape{0}, Shape{4, 1, 2, 1, 3}, Shape{}}) {
    add("ConstantOfShape/zeros/" + shape_tag(shape), "ConstantOfShape", {int64_tensor(shape)}, {},
        [shape](const Inputs&) {
          return std::vector<Tensor>{
              tensor_of(DType::Float32, shape, std::vector<double>(size_t(product(shape)), 0))};
        });
    for (const Tensor& v : values)
      add("ConstantOfShape/" + tag(v.dtype(), shape), "ConstantOfShape", {int64_tensor(shape)},
          {Attribute::make_tensor("value", v)}, [shape, v](const Inputs&) {
            return std::vector<Tensor>{move_elements(v, shape, [](const auto&) { return 0; })};
          });
  }
  struct RangeCase {
    DType dtype;
    double start, limit, delta;
  };
  for (const RangeCase& c : std::vector<RangeCase>{{DType::Int64, 0, 10, 3},
                                                   {DType::Int64, 10, -5, -2},
                                                   {DType::Int64, 5, 5, 1},
                                                   {DType::Int32, -7, 20, 4},
                                                   {DType::Int16, 3, -30, -7},
                                                   {DType::Float32, 0.5, 3.7, 0.3},
                                                   {DType::Float32, 1, -2, -0.1},
                                                   {DType::Float64, -1, 1, 0.01},
                                                   {DType::Float32, 0, 100000, 1.5}}) {
    // Floats: one rounding per element (start + i * delta), as every backend computes it.
    cases.push_back(
        {.name = fmt::format("Range/{}/{}:{}:{}", dtype_tag(c.dtype), c.start, c.limit, c.delta),
         .op = "Range",
         .inputs = {tensor_of(c.dtype, {}, {c.start}), tensor_of(c.dtype, {}, {c.limit}),
                    tensor_of(c.dtype, {}, {c.delta})},
         .reference =
             [c](const Inputs& in) {
               double start = in[0]->scalar_as_double(0), limit = in[1]->scalar_as_double(0),
                      delta = in[2]->scalar_as_double(0);
               int64_t n =
                   std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
               std::vector<double> v;
               for (int64_t i = 0; i < n; ++i) v.push_back(start + static_cast<double>(i) * delta);
               return std::vector<Tensor>{tensor_of(c.dtype, {n}, v)};
             },
         .tolerance = {1e-6, 1e-6}});
  }
  seed = 1000;
  for (DType dt : kDtypes)
    for (const Shape& shape : {Shape{2, 3, 5, 4}, Shape{6, 6}, Shape{0, 3, 3}, Shape{3, 1, 7}}) {
      Tensor x = data_of(dt, shape, ++seed);
      for (int64_t upper : {0, 1}) {
        add(fmt::format("Trilu/{}/upper={}", tag(dt, shape), upper), "Trilu", {x},
            {int_attr("upper", upper)});
        for (int64_t k : {0, 2, -3, 100, -100})
          add(fmt::format("Trilu/{}/upper={}/k={}", tag(dt, shape), upper, k), "Trilu",
              {x, int64_scalar(k)}, {int_attr("upper", upper)});
      }
    }
  for (DType dt : kDtypes)
    for (int64_t k : {0, 2, -1, 10, -10}) {
      add(fmt::format("EyeLike/{}/4x6/k={}", dtype_tag(dt), k), "EyeLike",
          {data_of(dt, {4, 6}, ++seed)}, {int_attr("k", k)});
      add(fmt::format("EyeLike/{}/5x3/k={}", dtype_tag(dt), k), "EyeLike",
          {data_of(dt, {5, 3}, ++seed)}, {int_attr("k", k)});
      for (DType to : {DType::Int32, DType::Float16, DType::Bool, DType::Float32})
        add(fmt::format("EyeLike/{}/4x6/k={}/to {}", dtype_tag(dt), k, dtype_tag(to)), "EyeLike",
            {data_of(dt, {4, 6}, ++seed)},
            {int_attr("k", k), int_attr("dtype", static_cast<int64_t>(to))});
    }
  seed = 1100;
  for (DType dt : kDtypes) {
    const std::string d = dtype_tag(dt);
    for (const char* mode : {"DCR", "CRD"})
      add(fmt::format("DepthToSpace/{}/2x8x3x5/{}", d, mode), "DepthToSpace",
          {data_of(dt, {2, 8, 3, 5}, ++seed)},
          {int_attr("blocksize", 2), string_attr("mode", mode)},
          depth_space_ref(true, 2, std::string(mode) == "CRD"));
    add("DepthToSpace/" + d + "/1x27x2x2/block 3", "DepthToSpace",
        {data_of(dt, {1, 27, 2, 2}, ++seed)}, {int_attr("blocksize", 3)},
        depth_space_ref(true, 3, false));
    add("SpaceToDepth/" + d + "/2x3x6x4", "SpaceToDepth", {data_of(dt, {2, 3, 6, 4}, ++seed)},
        {int_attr("blocksize", 2)}, depth_space_ref(false, 2, false));
    add("SpaceToDepth/" + d + "/0x3x6x4", "SpaceToDepth", {data_of(dt, {0, 3, 6, 4}, ++seed)},
        {int_attr("blocksize", 2)}, depth_space_ref(false, 2, false));
  }
  return cases;
}

}  // namespace

SY_HARNESS_FAMILY(shape, shape_cases)

}  // namespace switchyard::testing::harness
