// Schemas of the rnn family (see op_kinds.def): RNN, GRU and LSTM with their optional outputs.
#include <algorithm>
#include <cctype>
#include <string>

#include "ir/checked_math.h"
#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

const std::vector<ir::DType>& rnn_dtypes() {
  static const std::vector<ir::DType> v = {ir::DType::Float16, ir::DType::Float32,
                                           ir::DType::Float64};
  return v;
}

bool is_known_activation(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const char* const kNames[] = {
      "relu",       "tanh",        "sigmoid", "affine",   "leakyrelu", "thresholdedrelu",
      "scaledtanh", "hardsigmoid", "elu",     "softsign", "softplus"};
  return std::any_of(std::begin(kNames), std::end(kNames),
                     [&](const char* k) { return name == k; });
}

// A dim of `shape` (rank checked by the caller) or unknown.
ir::Dim dim_or_unknown(const ir::Type& t, size_t i) {
  return t.has_rank() && i < t.shape->size() ? (*t.shape)[i] : ir::Dim();
}

void check_dim(const InferContext& ctx, const ir::Type& t, size_t i, const ir::Dim& expected,
               const char* what) {
  ir::Dim d = dim_or_unknown(t, i);
  if (d.is_static() && expected.is_static() && d.value != expected.value)
    ctx.fail("{} has dim {} = {}, expected {}", what, i, d.value, expected.value);
}

// Shared inference of RNN (gates = 1), GRU (3) and LSTM (4).
void infer_recurrent(InferContext& ctx, int64_t gates, int64_t activations_per_direction) {
  const ir::Node& n = ctx.node();
  const bool lstm = gates == 4;
  std::string direction = n.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    ctx.fail("direction '{}' must be forward, reverse or bidirectional", direction);
  const int64_t num_directions = direction == "bidirectional" ? 2 : 1;
  const int64_t layout = n.attr_int("layout", 0);
  if (layout != 0 && layout != 1) ctx.fail("layout {} must be 0 or 1", layout);
  const int64_t hidden_attr = n.attr_int("hidden_size", -1);
  if (n.has_attribute("hidden_size") && hidden_attr <= 0)
    ctx.fail("hidden_size {} must be positive", hidden_attr);
  if (n.has_attribute("clip") && !(n.attr_float("clip") > 0.0f))
    ctx.fail("clip {} must be positive", n.attr_float("clip"));
  if (n.has_attribute("activations")) {
    auto acts = n.attr_strings("activations");
    for (const auto& a : acts)
      if (!is_known_activation(a)) ctx.fail("activation '{}' is not supported", a);
    size_t per = static_cast<size_t>(activations_per_direction);
    if (acts.size() != per * static_cast<size_t>(num_directions) &&
        !(num_directions == 2 && acts.size() == per))
      ctx.fail("has {} activations, expected {} for direction '{}'", acts.size(),
               per * static_cast<size_t>(num_directions), direction);
  }
  (void)n.attr_floats("activation_alpha", {});
  (void)n.attr_floats("activation_beta", {});
  if (gates == 3) {
    int64_t lbr = n.attr_int("linear_before_reset", 0);
    if (lbr != 0 && lbr != 1) ctx.fail("linear_before_reset {} must be 0 or 1", lbr);
  }
  if (lstm) {
    int64_t input_forget = n.attr_int("input_forget", 0);
    if (input_forget != 0 && input_forget != 1)
      ctx.fail("input_forget {} must be 0 or 1", input_forget);
  }

  const ir::DType dtype = require_dtype(ctx, 0, rnn_dtypes());
  for (size_t i : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{6}, size_t{7}}) {
    if (i >= ctx.num_inputs() || !ctx.has_input(i) || (!lstm && i > 5)) continue;
    const ir::Type& t = ctx.input_tensor(i);
    if (t.is_tensor() && dtype != ir::DType::Undefined && t.dtype != dtype)
      ctx.fail("input {} has dtype {}, expected {} like X", i, ir::dtype_name(t.dtype),
               ir::dtype_name(dtype));
  }
  if (ctx.has_input(4)) require_dtype(ctx, 4, {ir::DType::Int32, ir::DType::Int64});

  const ir::Type& x = ctx.input_tensor(0);
  const ir::Type& w = ctx.input_tensor(1);
  const ir::Type& r = ctx.input_tensor(2);
  if (x.has_rank() && x.rank() != 3) ctx.fail("X has rank {}, expected 3", x.rank());
  if (w.has_rank() && w.rank() != 3) ctx.fail("W has rank {}, expected 3", w.rank());
  if (r.has_rank() && r.rank() != 3) ctx.fail("R has rank {}, expected 3", r.rank());

  ir::Dim hidden = hidden_attr > 0 ? ir::Dim(hidden_attr) : dim_or_unknown(r, 2);
  ir::Dim rows = hidden.is_static()
                     ? ir::Dim(ir::checked_mul(gates, hidden.value, "gates x hidden_size"))
                     : ir::Dim();
  check_dim(ctx, w, 0, ir::Dim(num_directions), "W");
  check_dim(ctx, r, 0, ir::Dim(num_directions), "R");
  check_dim(ctx, w, 1, rows, "W");
  check_dim(ctx, r, 1, rows, "R");
  check_dim(ctx, r, 2, hidden, "R");
  check_dim(ctx, w, 2, dim_or_unknown(x, 2), "W");
  if (ctx.has_input(3)) {
    const ir::Type& b = ctx.input_tensor(3);
    if (b.has_rank() && b.rank() != 2) ctx.fail("B has rank {}, expected 2", b.rank());
    check_dim(ctx, b, 0, ir::Dim(num_directions), "B");
    check_dim(ctx, b, 1,
              rows.is_static() ? ir::Dim(ir::checked_mul(2, rows.value, "2 x gates x hidden_size"))
                               : ir::Dim(),
              "B");
  }

  ir::Dim seq = dim_or_unknown(x, layout == 0 ? 0 : 1);
  ir::Dim batch = dim_or_unknown(x, layout == 0 ? 1 : 0);
  ir::Dim dirs(num_directions);
  if (layout == 0) {
    ctx.set_output(0, ir::Type::tensor(dtype, ir::Shape{seq, dirs, batch, hidden}));
    ctx.set_output(1, ir::Type::tensor(dtype, ir::Shape{dirs, batch, hidden}));
    if (lstm) ctx.set_output(2, ir::Type::tensor(dtype, ir::Shape{dirs, batch, hidden}));
  } else {
    ctx.set_output(0, ir::Type::tensor(dtype, ir::Shape{batch, seq, dirs, hidden}));
    ctx.set_output(1, ir::Type::tensor(dtype, ir::Shape{batch, dirs, hidden}));
    if (lstm) ctx.set_output(2, ir::Type::tensor(dtype, ir::Shape{batch, dirs, hidden}));
  }
}

}  // namespace

void register_rnn_schemas(SchemaRegistry& r) {
  // Inputs: X, W, R, B, sequence_lens, initial_h (LSTM adds initial_c, P).
  r.add(OpSchema{OpKind::RNN, 3, 6, 0, 2, [](InferContext& ctx) { infer_recurrent(ctx, 1, 1); }});
  r.add(OpSchema{OpKind::GRU, 3, 6, 0, 2, [](InferContext& ctx) { infer_recurrent(ctx, 3, 2); }});
  r.add(OpSchema{OpKind::LSTM, 3, 8, 0, 3, [](InferContext& ctx) { infer_recurrent(ctx, 4, 3); }});
}

}  // namespace switchyard::ops
