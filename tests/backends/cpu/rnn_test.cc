// RNN, GRU and LSTM against a plain per-step reference in double.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct RnnConfig {
  std::string op = "LSTM";
  int64_t seq = 3, batch = 2, input = 4, hidden = 3;
  std::string direction = "forward";
  int64_t layout = 0;
  bool bias = true, lengths = false, initial = true, peepholes = false;
  float clip = 0;
  bool linear_before_reset = false, input_forget = false;
  bool constant_weights = false;         // W, R, B as initializers (the kernels pack them once)
  std::vector<std::string> activations;  // empty = defaults
  std::vector<float> alphas, betas;
};

int64_t gates_of(const std::string& op) { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }

struct Inputs {
  ir::Tensor x, w, r, b, lens, h0, c0, p;
};

Inputs make_inputs(const RnnConfig& c, DType dt, uint64_t seed) {
  int64_t dirs = c.direction == "bidirectional" ? 2 : 1;
  int64_t g = gates_of(c.op);
  Inputs in;
  in.x = random_tensor(dt,
                       c.layout ? std::vector<int64_t>{c.batch, c.seq, c.input}
                                : std::vector<int64_t>{c.seq, c.batch, c.input},
                       seed);
  in.w = random_tensor(dt, {dirs, g * c.hidden, c.input}, seed + 1, -0.7, 0.7);
  in.r = random_tensor(dt, {dirs, g * c.hidden, c.hidden}, seed + 2, -0.7, 0.7);
  in.b = random_tensor(dt, {dirs, 2 * g * c.hidden}, seed + 3, -0.5, 0.5);
  in.lens = ir::Tensor(DType::Int32, {c.batch});
  for (int64_t b = 0; b < c.batch; ++b)
    in.lens.data<int32_t>()[b] = static_cast<int32_t>(std::max<int64_t>(0, c.seq - b));
  std::vector<int64_t> state = c.layout ? std::vector<int64_t>{c.batch, dirs, c.hidden}
                                        : std::vector<int64_t>{dirs, c.batch, c.hidden};
  in.h0 = random_tensor(dt, state, seed + 4);
  in.c0 = random_tensor(dt, state, seed + 5);
  in.p = random_tensor(dt, {dirs, 3 * c.hidden}, seed + 6, -0.5, 0.5);
  return in;
}

double apply(const std::string& name, double x, double alpha, double beta) {
  if (name == "Tanh") return std::tanh(x);
  if (name == "Sigmoid") return sigmoid(x);
  if (name == "Relu") return std::max(0.0, x);
  if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
  if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
  if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
  if (name == "Affine") return alpha * x + beta;
  if (name == "Softsign") return x / (1 + std::fabs(x));
  SY_ASSERT(false);
  return 0;
}

// Outputs Y, Y_h, Y_c in the configured layout.
std::vector<std::vector<double>> reference(const RnnConfig& c, const Inputs& in) {
  int64_t dirs = c.direction == "bidirectional" ? 2 : 1;
  int64_t g = gates_of(c.op), H = c.hidden, B = c.batch, T = c.seq, I = c.input;
  auto x = to_doubles(in.x), w = to_doubles(in.w), r = to_doubles(in.r);
  auto bias = c.bias ? to_doubles(in.b) : std::vector<double>(dirs * 2 * g * H, 0.0);
  auto h0 = c.initial ? to_doubles(in.h0) : std::vector<double>(dirs * B * H, 0.0);
  auto c0 = c.initial ? to_doubles(in.c0) : std::vector<double>(dirs * B * H, 0.0);
  auto p = c.peepholes ? to_doubles(in.p) : std::vector<double>(dirs * 3 * H, 0.0);
  size_t per = c.op == "RNN" ? 1 : c.op == "GRU" ? 2 : 3;
  std::vector<std::string> acts = c.activations;
  if (acts.empty()) {
    if (c.op == "RNN") acts = {"Tanh"};
    if (c.op == "GRU") acts = {"Sigmoid", "Tanh"};
    if (c.op == "LSTM") acts = {"Sigmoid", "Tanh", "Tanh"};
  }
  if (acts.size() == per && dirs == 2) {
    std::vector<std::string> once = acts;
    acts.insert(acts.end(), once.begin(), once.end());
  }
  auto xs = [&](int64_t t, int64_t b, int64_t i) {
    return c.layout ? x[(b * T + t) * I + i] : x[(t * B + b) * I + i];
  };
  auto st = [&](const std::vector<double>& v, int64_t d, int64_t b, int64_t k) {
    return c.layout ? v[(b * dirs + d) * H + k] : v[(d * B + b) * H + k];
  };
  auto cl = [&](double v) {
    return c.clip > 0 ? std::clamp(v, -(double)c.clip, (double)c.clip) : v;
  };
  std::vector<double> y(T * dirs * B * H, 0.0), yh(dirs * B * H), yc(dirs * B * H);
  for (int64_t d = 0; d < dirs; ++d) {
    // alpha/beta are consumed by the functions that use them, in order; all tests use them on
    // the functions listed, so an index per activation position suffices.
    auto f = [&](size_t k, double v) {
      size_t idx = d * per + k;
      double a = idx < c.alphas.size() ? c.alphas[idx] : 0.0;
      double be = idx < c.betas.size() ? c.betas[idx] : 0.0;
      return apply(acts[idx], v, a, be);
    };
    bool rev = c.direction == "reverse" || d == 1;
    for (int64_t b = 0; b < B; ++b) {
      int64_t len = c.lengths ? in.lens.data<int32_t>()[b] : T;
      std::vector<double> h(H), cs(H);
      for (int64_t k = 0; k < H; ++k) h[k] = st(h0, d, b, k), cs[k] = st(c0, d, b, k);
      for (int64_t s = 0; s < len; ++s) {
        int64_t t = rev ? len - 1 - s : s;
        // gate pre-activations without the recurrent term of GRU's hidden gate
        auto lin = [&](int64_t row, bool with_r, const std::vector<double>& hv) {
          double acc = bias[d * 2 * g * H + row];
          for (int64_t i = 0; i < I; ++i) acc += xs(t, b, i) * w[(d * g * H + row) * I + i];
          if (with_r) {
            acc += bias[d * 2 * g * H + g * H + row];
            for (int64_t k = 0; k < H; ++k) acc += hv[k] * r[(d * g * H + row) * H + k];
          }
          return acc;
        };
        auto rec = [&](int64_t row, const std::vector<double>& hv) {
          double acc = bias[d * 2 * g * H + g * H + row];
          for (int64_t k = 0; k < H; ++k) acc += hv[k] * r[(d * g * H + row) * H + k];
          return acc;
        };
        std::vector<double> nh(H);
        if (c.op == "RNN") {
          for (int64_t k = 0; k < H; ++k) nh[k] = f(0, cl(lin(k, true, h)));
        } else if (c.op == "GRU") {
          std::vector<double> z(H), rr(H), rh(H);
          for (int64_t k = 0; k < H; ++k) {
            z[k] = f(0, cl(lin(k, true, h)));
            rr[k] = f(0, cl(lin(H + k, true, h)));
            rh[k] = rr[k] * h[k];
          }
          for (int64_t k = 0; k < H; ++k) {
            double pre = c.linear_before_reset
                             ? lin(2 * H + k, false, h) + rr[k] * rec(2 * H + k, h)
                             : lin(2 * H + k, false, h) + rec(2 * H + k, rh);
            double cand = f(1, cl(pre));
            nh[k] = (1 - z[k]) * cand + z[k] * h[k];
          }
        } else {
          std::vector<double> nc(H);
          for (int64_t k = 0; k < H; ++k) {
            double i_g = f(0, cl(lin(k, true, h) + p[d * 3 * H + k] * cs[k]));
            double f_g = c.input_forget
                             ? 1 - i_g
                             : f(0, cl(lin(2 * H + k, true, h) + p[d * 3 * H + 2 * H + k] * cs[k]));
            double cand = f(1, cl(lin(3 * H + k, true, h)));
            nc[k] = f_g * cs[k] + i_g * cand;
            double o_g = f(0, cl(lin(H + k, true, h) + p[d * 3 * H + H + k] * nc[k]));
            nh[k] = o_g * f(2, nc[k]);
          }
          cs = nc;
        }
        h = nh;
        for (int64_t k = 0; k < H; ++k) {
          size_t idx =
              c.layout ? ((b * T + t) * dirs + d) * H + k : ((t * dirs + d) * B + b) * H + k;
          y[idx] = h[k];
        }
      }
      for (int64_t k = 0; k < H; ++k) {
        size_t idx = c.layout ? (b * dirs + d) * H + k : (d * B + b) * H + k;
        yh[idx] = h[k];
        yc[idx] = cs[k];
      }
    }
  }
  return {y, yh, yc};
}

void check(const RnnConfig& c, DType dt, double tol) {
  SCOPED_TRACE(c.op + " " + c.direction + " layout " + std::to_string(c.layout) + " dtype " +
               std::string(ir::dtype_name(dt)));
  Inputs in = make_inputs(c, dt, 42);
  OpCase oc;
  oc.op = c.op;
  oc.inputs = {in.x, in.w, in.r};
  oc.inputs.push_back(c.bias ? std::optional(in.b) : std::nullopt);
  oc.inputs.push_back(c.lengths ? std::optional(in.lens) : std::nullopt);
  oc.inputs.push_back(c.initial ? std::optional(in.h0) : std::nullopt);
  if (c.op == "LSTM") {
    oc.inputs.push_back(c.initial ? std::optional(in.c0) : std::nullopt);
    oc.inputs.push_back(c.peepholes ? std::optional(in.p) : std::nullopt);
  }
  while (!oc.inputs.back()) oc.inputs.pop_back();
  if (c.constant_weights) {
    oc.constant_inputs.assign(oc.inputs.size(), false);
    for (size_t i = 1; i <= 3 && i < oc.inputs.size(); ++i)
      oc.constant_inputs[i] = oc.inputs[i].has_value();
  }
  oc.attributes = {ir::Attribute::make_int("hidden_size", c.hidden),
                   ir::Attribute::make_string("direction", c.direction),
                   ir::Attribute::make_int("layout", c.layout)};
  if (c.clip > 0) oc.attributes.push_back(ir::Attribute::make_float("clip", c.clip));
  if (c.linear_before_reset)
    oc.attributes.push_back(ir::Attribute::make_int("linear_before_reset", 1));
  if (c.input_forget) oc.attributes.push_back(ir::Attribute::make_int("input_forget", 1));
  if (!c.activations.empty()) {
    ir::Attribute a;
    a.name = "activations";
    a.kind = ir::Attribute::Kind::Strings;
    a.strings = c.activations;
    oc.attributes.push_back(a);
  }
  if (!c.alphas.empty())
    oc.attributes.push_back(ir::Attribute::make_floats("activation_alpha", c.alphas));
  if (!c.betas.empty())
    oc.attributes.push_back(ir::Attribute::make_floats("activation_beta", c.betas));
  oc.num_outputs = c.op == "LSTM" ? 3 : 2;
  auto out = run_op(oc);
  auto ref = reference(c, in);
  for (int i = 0; i < oc.num_outputs; ++i) {
    const ir::Tensor& t = out[i].tensor;
    EXPECT_EQ(t.dtype(), dt);
    auto got = to_doubles(t);
    ASSERT_EQ(got.size(), ref[i].size()) << "output " << i;
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_NEAR(got[k], ref[i][k], tol * (1 + std::fabs(ref[i][k])))
          << "output " << i << " at " << k;
  }
}

TEST(RnnKernels, AllCellsDirectionsLayouts) {
  for (std::string op : {"RNN", "GRU", "LSTM"})
    for (std::string dir : {"forward", "reverse", "bidirectional"})
      for (int64_t layout : {0, 1}) {
        RnnConfig c;
        c.op = op;
        c.direction = dir;
        c.layout = layout;
        check(c, DType::Float32, 1e-5);
      }
}

// Float32 LSTMs and GRUs of the common form run as oneDNN RNN primitives (rnn.cc:
// run_dnnl_rnn) from batch 8 (below it, and for a GRU with linear_before_reset, as the fused
// step): larger problems than above, in every direction, with and without linear_before_reset,
// against the double reference.
TEST(RnnKernels, LargerProblemsThroughOneDnnPrimitives) {
  for (std::string op : {"GRU", "LSTM"})
    for (std::string dir : {"forward", "reverse", "bidirectional"})
      for (bool lbr : {false, true}) {
        if (op == "LSTM" && lbr) continue;
        RnnConfig c;
        c.op = op;
        c.direction = dir;
        c.seq = 17;
        // Forward: batch 9 with an input wider than the hidden state; the others: batch 8,
        // input 24 < hidden 40.
        c.input = dir == "forward" ? 48 : 24;
        c.hidden = 40;
        c.batch = dir == "forward" ? 9 : 8;
        c.linear_before_reset = lbr;
        c.layout = dir == "reverse" ? 1 : 0;
        check(c, DType::Float32, 2e-5);
      }
}

// Float32 LSTMs and linear-before-reset GRUs of the common form below batch 8 run the fused
// step (rnn_cell.cc): 16-unit blocks, so hidden sizes around and across a block edge; 1 to 7
// rows (the AVX-512 build takes rows 4 and 2 at a time, then one); sequence lengths that end
// rows early; weights as graph inputs and as packed initializers. ctest runs this file a second
// time with SWITCHYARD_CPU_ISA=avx2, for the other build.
TEST(RnnKernels, FusedCellsMatchTheReference) {
  for (std::string op : {"GRU", "LSTM"})
    for (int64_t hidden : {1, 15, 16, 17, 40})
      for (int64_t batch : {1, 2, 3, 5, 7}) {
        RnnConfig c;
        c.op = op;
        c.linear_before_reset = op == "GRU";
        c.hidden = hidden;
        c.batch = batch;
        c.seq = 6;
        c.input = 5 + hidden % 7;
        c.direction = batch % 3 == 0 ? "reverse" : batch % 2 ? "bidirectional" : "forward";
        c.lengths = batch > 2;
        c.initial = hidden != 15;
        c.constant_weights = batch % 2 == 1;
        c.layout = hidden == 17 ? 1 : 0;
        SCOPED_TRACE("hidden " + std::to_string(hidden) + " batch " + std::to_string(batch));
        check(c, DType::Float32, 2e-5);
      }
}

TEST(RnnKernels, SequenceLengthsAndNoInitialState) {
  for (std::string op : {"RNN", "GRU", "LSTM"})
    for (std::string dir : {"forward", "reverse", "bidirectional"}) {
      RnnConfig c;
      c.op = op;
      c.direction = dir;
      c.seq = 4;
      c.batch = 5;  // lengths 4,3,2,1,0
      c.lengths = true;
      c.initial = dir != "reverse";
      c.bias = dir != "forward";
      check(c, DType::Float32, 1e-5);
    }
}

TEST(RnnKernels, GruLinearBeforeResetAndClip) {
  RnnConfig c;
  c.op = "GRU";
  c.linear_before_reset = true;
  check(c, DType::Float32, 1e-5);
  c.clip = 0.3f;
  c.direction = "bidirectional";
  check(c, DType::Float64, 1e-12);
}

TEST(RnnKernels, LstmPeepholesInputForgetClip) {
  RnnConfig c;
  c.op = "LSTM";
  c.peepholes = true;
  check(c, DType::Float32, 1e-5);
  c.input_forget = true;
  c.clip = 0.5f;
  c.direction = "bidirectional";
  c.layout = 1;
  check(c, DType::Float64, 1e-12);
}

TEST(RnnKernels, ActivationsWithAlphaBeta) {
  RnnConfig c;
  c.op = "LSTM";
  c.activations = {"HardSigmoid", "LeakyRelu", "ScaledTanh"};
  c.alphas = {0.3f, 0.05f, 1.5f};
  c.betas = {0.4f, 0.0f, 0.7f};
  // HardSigmoid uses alpha[0], beta[0]; LeakyRelu alpha[1]; ScaledTanh alpha[2], beta[1].
  c.betas = {0.4f, 0.7f};
  RnnConfig ref_c = c;
  ref_c.betas = {0.4f, 0.0f, 0.7f};
  Inputs in = make_inputs(c, DType::Float32, 7);
  OpCase oc;
  oc.op = "LSTM";
  oc.inputs = {in.x, in.w, in.r, in.b};
  ir::Attribute a;
  a.name = "activations";
  a.kind = ir::Attribute::Kind::Strings;
  a.strings = c.activations;
  oc.attributes = {ir::Attribute::make_int("hidden_size", c.hidden), a,
                   ir::Attribute::make_floats("activation_alpha", c.alphas),
                   ir::Attribute::make_floats("activation_beta", c.betas)};
  oc.num_outputs = 2;
  ref_c.initial = false;
  auto out = run_op(oc);
  auto ref = reference(ref_c, in);
  auto got = to_doubles(out[0].tensor);
  for (size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], ref[0][k], 1e-5);
  RnnConfig g;
  g.op = "GRU";
  g.activations = {"Relu", "Softsign", "Affine", "Tanh"};
  g.alphas = {0.0f, 0.0f, 0.8f};
  g.betas = {0.0f, 0.0f, 0.1f};
  g.direction = "bidirectional";
  // Affine is the only alpha/beta user: its values are alpha[0], beta[0].
  Inputs gin = make_inputs(g, DType::Float32, 9);
  OpCase go;
  go.op = "GRU";
  go.inputs = {gin.x, gin.w, gin.r, gin.b};
  a.strings = g.activations;
  go.attributes = {ir::Attribute::make_int("hidden_size", g.hidden),
                   ir::Attribute::make_string("direction", "bidirectional"), a,
                   ir::Attribute::make_floats("activation_alpha", {0.8f}),
                   ir::Attribute::make_floats("activation_beta", {0.1f})};
  go.num_outputs = 2;
  g.initial = false;
  auto gout = run_op(go);
  auto gref = reference(g, gin);
  auto ggot = to_doubles(gout[1].tensor);
  for (size_t k = 0; k < ggot.size(); ++k) ASSERT_NEAR(ggot[k], gref[1][k], 1e-5);
}

TEST(RnnKernels, HalfPrecision) {
  for (std::string op : {"RNN", "GRU", "LSTM"}) {
    RnnConfig c;
    c.op = op;
    c.direction = "bidirectional";
    c.peepholes = op == "LSTM";
    check(c, DType::Float16, 2e-2);
  }
}

TEST(RnnKernels, EmptyBatchAndLargeSizes) {
  RnnConfig c;
  c.batch = 0;
  c.initial = false;
  check(c, DType::Float32, 1e-5);
  RnnConfig big;
  big.op = "GRU";
  big.seq = 5;
  big.batch = 9;
  big.input = 33;
  big.hidden = 17;
  check(big, DType::Float32, 1e-4);
}

TEST(RnnKernels, ErrorsNameTheNode) {
  RnnConfig c;
  Inputs in = make_inputs(c, DType::Float32, 1);
  OpCase oc;
  oc.op = "LSTM";
  oc.inputs = {in.x, in.w, in.r};
  oc.attributes = {ir::Attribute::make_string("direction", "sideways")};
  try {
    run_op(oc);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
  }
  oc.attributes = {ir::Attribute::make_int("hidden_size", 5)};  // R says 3
  EXPECT_THROW(run_op(oc), Error);
  ir::Tensor lens(DType::Int32, {c.batch});
  lens.data<int32_t>()[0] = 9;
  oc.attributes = {};
  oc.inputs = {in.x, in.w, in.r, std::nullopt, lens};
  try {
    run_op(oc);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sequence_lens"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace switchyard::testing
