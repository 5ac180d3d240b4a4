// Models driven by control flow, built with the GraphBuilder, shared by the CUDA control-flow
// tests (control_flow_gpu_test.cc) and their benchmark (bench/gpu/control_flow_bench.cc).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "support/op_test_util.h"
#include "switchyard/builder.hpp"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing::control_flow_models {

/// Seeded weights in [-0.5, 0.5).
inline Tensor weights(std::vector<int64_t> shape, uint64_t seed) {
  return random_tensor(DType::Float32, std::move(shape), seed, -0.5, 0.5);
}

/// An LSTM cell driven by Loop over M (input "M", int64, on the host) steps of X
/// [max_steps, batch, in] (x_t = Gather(X, t)) from h0, c0 [batch, hidden]: gates = x_t W + h R
/// + b split into i, f, g, o; c' = f c + i g; h' = o tanh(c'). Outputs h and c.
inline Model lstm(int64_t max_steps, int64_t batch, int64_t in, int64_t hidden) {
  GraphBuilder b("lstm");
  Value m = b.placeholder("M", DType::Int64, {});
  Value x = b.placeholder("X", DType::Float32, {max_steps, batch, in});
  Value h0 = b.placeholder("h0", DType::Float32, {batch, hidden});
  Value c0 = b.placeholder("c0", DType::Float32, {batch, hidden});
  Value w = b.constant(weights({in, 4 * hidden}, 11));
  Value r = b.constant(weights({hidden, 4 * hidden}, 12));
  Value bias = b.constant(weights({4 * hidden}, 13));
  Value split = b.constant(int64_tensor({hidden, hidden, hidden, hidden}));
  std::vector<Value> out =
      b.for_loop(m, {h0, c0}, [&](GraphBuilder& g, Value t, std::vector<Value> hc) {
        Value xt = g.op("Gather", {x, t}, {{"axis", int64_t{0}}})[0];
        Value gates = g.add(g.add(g.matmul(xt, w), g.matmul(hc[0], r)), bias);
        std::vector<Value> ifgo = g.op("Split", {gates, split}, {{"axis", int64_t{1}}}, 4);
        Value c =
            g.add(g.mul(g.sigmoid(ifgo[1]), hc[1]), g.mul(g.sigmoid(ifgo[0]), g.tanh(ifgo[2])));
        Value h = g.mul(g.sigmoid(ifgo[3]), g.tanh(c));
        return std::vector<Value>{h, c};
      });
  b.outputs({{"h", out[0]}, {"c", out[1]}});
  return std::move(b).build();
}

/// The LSTM's inputs: M = steps, seeded X, h0 and c0.
inline std::vector<Datum> lstm_inputs(int64_t steps, int64_t max_steps, int64_t batch, int64_t in,
                                      int64_t hidden, uint64_t seed) {
  return {int64_scalar(steps), random_tensor(DType::Float32, {max_steps, batch, in}, seed),
          random_tensor(DType::Float32, {batch, hidden}, seed + 1),
          random_tensor(DType::Float32, {batch, hidden}, seed + 2)};
}

/// A while loop with a data-dependent exit (a Loop without trip count whose condition the
/// body computes): x ← 1.25 x + 0.5 while sum(x) < limit. Inputs x [batch, hidden] and
/// limit (a float32 scalar); output x_final.
inline Model while_loop(int64_t batch, int64_t hidden) {
  GraphBuilder b("while");
  Value x0 = b.placeholder("x", DType::Float32, {batch, hidden});
  Value limit = b.placeholder("limit", DType::Float32, {});
  Value scale = b.scalar(DType::Float32, 1.25), shift = b.scalar(DType::Float32, 0.5);
  std::vector<Value> out = b.while_loop(
      {x0},
      [&](GraphBuilder& g, std::vector<Value> v) {
        return std::make_pair(g.less(g.reduce_sum(v[0], {}, false), limit), v);
      },
      [&](GraphBuilder& g, std::vector<Value> v) {
        return std::vector<Value>{g.add(g.mul(v[0], scale), shift)};
      });
  b.outputs({{"x_final", out[0]}});
  return std::move(b).build();
}

/// The while loop's inputs: seeded x in [0, 1) and `limit`.
inline std::vector<Datum> while_inputs(int64_t batch, int64_t hidden, double limit, uint64_t seed) {
  std::vector<Datum> inputs = {random_tensor(DType::Float32, {batch, hidden}, seed, 0.0, 1.0),
                               Tensor(DType::Float32, {})};
  inputs[1].tensor.data<float>()[0] = static_cast<float>(limit);
  return inputs;
}

}  // namespace switchyard::testing::control_flow_models
