// CPU kernels of the rnn family: RNN, GRU and LSTM over one shared driver. The input projection
// of every time step is one matrix product up front; each step then adds the recurrent product
// and applies the cell's gates. Half types compute in float.
#include <algorithm>
#include <cctype>
#include <string>

#include "backends/cpu/kernels/common.h"
#include "backends/cpu/kernels/dnnl_util.h"
#include "backends/cpu/kernels/rnn_internal.h"
#include "ir/check.h"

namespace switchyard::cpu {

namespace {

enum class CellKind { Rnn, Gru, Lstm };

struct Activation {
  enum class Fn {
    Relu,
    Tanh,
    Sigmoid,
    Affine,
    LeakyRelu,
    ThresholdedRelu,
    ScaledTanh,
    HardSigmoid,
    Elu,
    Softsign,
    Softplus
  };
  Fn fn = Fn::Tanh;
  double alpha = 0;
  double beta = 0;

  template <typename C>
  C operator()(C x) const {
    const C a = static_cast<C>(alpha);
    const C b = static_cast<C>(beta);
    switch (fn) {
      case Fn::Relu:
        return x > C(0) ? x : C(0);
      case Fn::Tanh:
        return std::tanh(x);
      case Fn::Sigmoid:
        return C(1) / (C(1) + std::exp(-x));
      case Fn::Affine:
        return a * x + b;
      case Fn::LeakyRelu:
        return x >= C(0) ? x : a * x;
      case Fn::ThresholdedRelu:
        return x > a ? x : C(0);
      case Fn::ScaledTanh:
        return a * std::tanh(b * x);
      case Fn::HardSigmoid:
        return std::max(C(0), std::min(C(1), a * x + b));
      case Fn::Elu:
        return x >= C(0) ? x : a * (std::exp(x) - C(1));
      case Fn::Softsign:
        return x / (C(1) + std::fabs(x));
      case Fn::Softplus:
        return x > C(20) ? x : std::log1p(std::exp(x));
    }
    return x;
  }
};

// Parses one activation name; alpha/beta come from the attribute lists in order of use, with the
// defaults ONNX Runtime documents.
Activation parse_activation(const ir::Node& node, std::string name,
                            const std::vector<float>& alphas, size_t& next_alpha,
                            const std::vector<float>& betas, size_t& next_beta) {
  using Fn = Activation::Fn;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  struct Entry {
    const char* name;
    Fn fn;
    bool uses_alpha;
    double alpha;
    bool uses_beta;
    double beta;
  };
  static const Entry kEntries[] = {
      {"relu", Fn::Relu, false, 0, false, 0},
      {"tanh", Fn::Tanh, false, 0, false, 0},
      {"sigmoid", Fn::Sigmoid, false, 0, false, 0},
      {"affine", Fn::Affine, true, 1.0, true, 0.0},
      {"leakyrelu", Fn::LeakyRelu, true, 0.01, false, 0},
      {"thresholdedrelu", Fn::ThresholdedRelu, true, 1.0, false, 0},
      {"scaledtanh", Fn::ScaledTanh, true, 1.0, true, 1.0},
      {"hardsigmoid", Fn::HardSigmoid, true, 0.2, true, 0.5},
      {"elu", Fn::Elu, true, 1.0, false, 0},
      {"softsign", Fn::Softsign, false, 0, false, 0},
      {"softplus", Fn::Softplus, false, 0, false, 0},
  };
  for (const Entry& e : kEntries) {
    if (name != e.name) continue;
    Activation a;
    a.fn = e.fn;
    a.alpha = e.alpha;
    a.beta = e.beta;
    if (e.uses_alpha && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (e.uses_beta && next_beta < betas.size()) a.beta = betas[next_beta++];
    return a;
  }
  SY_THROW(InvalidModel, "{}: activation '{}' is not supported", node.describe(), name);
}

// out[i * ldo + j] = bias[j] + sum_k a[i * lda + k] * w[j * k_size + k], for i < m, j < n.
template <typename C>
void matmul_nt(const C* a, int64_t lda, int64_t m, int64_t k_size, const C* w, int64_t n,
               const C* bias, C* out, int64_t ldo, int threads) {
  int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(k_size, 1));
  parallel_for(m * n, grain, threads, [&](int64_t begin, int64_t end) {
    for (int64_t idx = begin; idx < end; ++idx) {
      int64_t i = idx / n;
      int64_t j = idx % n;
      const C* ar = a + i * lda;
      const C* wr = w + j * k_size;
      C acc = bias ? bias[j] : C(0);
      for (int64_t k = 0; k < k_size; ++k) acc += ar[k] * wr[k];
      out[i * ldo + j] = acc;
    }
  });
}

// float32 through oneDNN's sgemm (run-time dispatch between AVX2 and AVX-512; the loop above is
// scalar dot products, ~30x slower on an LSTM tagger): C = bias rows, then C += A * W^T.
template <>
void matmul_nt<float>(const float* a, int64_t lda, int64_t m, int64_t k_size, const float* w,
                      int64_t n, const float* bias, float* out, int64_t ldo, int threads) {
  if (m == 0 || n == 0) return;
  for (int64_t i = 0; i < m; ++i) {
    float* row = out + i * ldo;
    if (bias) {
      std::copy(bias, bias + n, row);
    } else {
      std::fill(row, row + n, 0.0f);
    }
  }
  if (k_size == 0) return;
  OmpThreadScope scope(threads);
  dnnl_status_t status =
      dnnl_sgemm('N', 'T', m, n, k_size, 1.0f, a, lda, w, k_size, 1.0f, out, ldo);
  SY_CHECK(status == dnnl_success, Internal, "oneDNN sgemm failed ({}) for [{}x{}] x [{}x{}]^T",
           static_cast<int>(status), m, k_size, n, k_size);
}

// The tensor's values in the compute type: its own data when the types agree (no copy), else
// converted into `store`.
template <typename C, typename T>
const C* to_compute(const ir::Tensor& t, std::vector<C>& store) {
  if constexpr (std::is_same_v<C, T>) {
    return t.data<T>();
  } else {
    store.resize(static_cast<size_t>(t.numel()));
    const T* p = t.data<T>();
    for (size_t i = 0; i < store.size(); ++i) store[i] = convert<C>(p[i]);
    return store.data();
  }
}

class RecurrentKernel : public runtime::Kernel {
 public:
  RecurrentKernel(const runtime::KernelInit& init, CellKind cell) : cell_(cell) {
    const ir::Node& n = init.node;
    gates_ = cell == CellKind::Rnn ? 1 : cell == CellKind::Gru ? 3 : 4;
    const size_t per_direction = cell == CellKind::Rnn ? 1 : cell == CellKind::Gru ? 2 : 3;
    std::string direction = n.attr_string("direction", "forward");
    SY_CHECK(direction == "forward" || direction == "reverse" || direction == "bidirectional",
             InvalidModel, "{}: direction '{}' must be forward, reverse or bidirectional",
             n.describe(), direction);
    num_directions_ = direction == "bidirectional" ? 2 : 1;
    reverse_ = direction == "reverse";
    layout_ = n.attr_int("layout", 0);
    SY_CHECK(layout_ == 0 || layout_ == 1, InvalidModel, "{}: layout {} must be 0 or 1",
             n.describe(), layout_);
    hidden_size_ = n.attr_int("hidden_size", -1);
    SY_CHECK(!n.has_attribute("hidden_size") || hidden_size_ > 0, InvalidModel,
             "{}: hidden_size {} must be positive", n.describe(), hidden_size_);
    if (n.has_attribute("clip")) {
      clip_ = n.attr_float("clip");
      SY_CHECK(clip_ > 0, InvalidModel, "{}: clip {} must be positive", n.describe(), clip_);
    }
    linear_before_reset_ = cell == CellKind::Gru && n.attr_int("linear_before_reset", 0) != 0;
    weights_constant_ = input_is_constant(n, 1) && input_is_constant(n, 2) &&
                        (n.num_inputs() < 4 || !n.input(3) || input_is_constant(n, 3));
    input_forget_ = cell == CellKind::Lstm && n.attr_int("input_forget", 0) != 0;

    std::vector<std::string> names;
    if (n.has_attribute("activations")) {
      names = n.attr_strings("activations");
    } else if (cell == CellKind::Rnn) {
      names = {"Tanh"};
    } else if (cell == CellKind::Gru) {
      names = {"Sigmoid", "Tanh"};
    } else {
      names = {"Sigmoid", "Tanh", "Tanh"};
    }
    if (num_directions_ == 2 && names.size() == per_direction) {
      std::vector<std::string> twice = names;
      twice.insert(twice.end(), names.begin(), names.end());
      names = twice;
    }
    SY_CHECK(names.size() == per_direction * static_cast<size_t>(num_directions_), InvalidModel,
             "{}: has {} activations, expected {}", n.describe(), names.size(),
             per_direction * static_cast<size_t>(num_directions_));
    std::vector<float> alphas = n.attr_floats("activation_alpha", {});
    std::vector<float> betas = n.attr_floats("activation_beta", {});
    size_t next_alpha = 0;
    size_t next_beta = 0;
    for (const auto& name : names)
      activations_.push_back(parse_activation(n, name, alphas, next_alpha, betas, next_beta));
  }

  void run(runtime::KernelContext& ctx) const override {
    dispatch(TypeList<float, double, Float16>{}, ctx.input(0).dtype(), ctx.node(),
             [&](auto tag) { run_typed<decltype(tag)>(ctx); });
  }

 private:
  // Inputs in the compute type, X in [seq, batch, input] order: x, w, r and b point into the
  // input tensors where no conversion or reordering is needed, else into the *_store copies.
  template <typename C>
  struct Problem {
    int64_t seq = 0, batch = 0, input = 0, hidden = 0;
    const C *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr;
    std::vector<C> x_store, w_store, r_store, b_store;
    std::vector<C> h0, c0, p;
    std::vector<int64_t> lengths;
  };

  void check_shape(const runtime::KernelContext& ctx, const ir::Tensor& t, const char* what,
                   const std::vector<int64_t>& expected) const {
    if (t.shape() != expected)
      ctx.fail("{} has shape {}, expected {}", what, ir::shape_to_string(t.shape()),
               ir::shape_to_string(expected));
  }

  // A state input given as [dirs, batch, hidden] (layout 0) or [batch, dirs, hidden] (layout 1),
  // returned in [dirs, batch, hidden] order.
  template <typename C, typename T>
  std::vector<C> read_state(const runtime::KernelContext& ctx, size_t index, const char* what,
                            int64_t batch, int64_t hidden) const {
    const int64_t dirs = num_directions_;
    std::vector<C> out(static_cast<size_t>(dirs * batch * hidden), C(0));
    if (!ctx.has_input(index)) return out;
    const ir::Tensor& t = ctx.input(index);
    if (t.dtype() != ctx.input(0).dtype()) ctx.fail("{} dtype differs from X", what);
    check_shape(ctx, t, what,
                layout_ == 0 ? std::vector<int64_t>{dirs, batch, hidden}
                             : std::vector<int64_t>{batch, dirs, hidden});
    const T* p = t.data<T>();
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t h = 0; h < hidden; ++h) {
          int64_t src = layout_ == 0 ? (d * batch + b) * hidden + h : (b * dirs + d) * hidden + h;
          out[static_cast<size_t>((d * batch + b) * hidden + h)] = convert<C>(p[src]);
        }
    return out;
  }

  template <typename T>
  void run_typed(runtime::KernelContext& ctx) const {
    using C = compute_t<T>;
    Problem<C> pb;
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& w = ctx.input(1);
    const ir::Tensor& r = ctx.input(2);
    if (x.rank() != 3) ctx.fail("X has rank {}, expected 3", x.rank());
    if (w.rank() != 3) ctx.fail("W has rank {}, expected 3", w.rank());
    if (r.rank() != 3) ctx.fail("R has rank {}, expected 3", r.rank());
    if (w.dtype() != x.dtype() || r.dtype() != x.dtype()) ctx.fail("W and R dtypes differ from X");
    const int64_t dirs = num_directions_;
    const int64_t g = gates_;
    pb.seq = layout_ == 0 ? x.dim(0) : x.dim(1);
    pb.batch = layout_ == 0 ? x.dim(1) : x.dim(0);
    pb.input = x.dim(2);
    pb.hidden = hidden_size_ > 0 ? hidden_size_ : r.dim(2);
    const int64_t hid = pb.hidden;
    if (hid <= 0) ctx.fail("hidden size {} must be positive", hid);
    check_shape(ctx, w, "W", {dirs, g * hid, pb.input});
    check_shape(ctx, r, "R", {dirs, g * hid, hid});
    pb.w = to_compute<C, T>(w, pb.w_store);
    pb.r = to_compute<C, T>(r, pb.r_store);
    if (ctx.has_input(3)) {
      const ir::Tensor& b = ctx.input(3);
      if (b.dtype() != x.dtype()) ctx.fail("B dtype differs from X");
      check_shape(ctx, b, "B", {dirs, 2 * g * hid});
      pb.b = to_compute<C, T>(b, pb.b_store);
    } else {
      pb.b_store.assign(static_cast<size_t>(dirs * 2 * g * hid), C(0));
      pb.b = pb.b_store.data();
    }
    pb.lengths.assign(static_cast<size_t>(pb.batch), pb.seq);
    if (ctx.has_input(4)) {
      const ir::Tensor& lens = ctx.input(4);
      if (!ir::dtype_is_integer(lens.dtype())) ctx.fail("sequence_lens must be an integer tensor");
      check_shape(ctx, lens, "sequence_lens", {pb.batch});
      for (int64_t b = 0; b < pb.batch; ++b) {
        int64_t len = lens.scalar_as_int(b);
        if (len < 0 || len > pb.seq)
          ctx.fail("sequence_lens[{}] = {} is out of range [0, {}]", b, len, pb.seq);
        pb.lengths[static_cast<size_t>(b)] = len;
      }
    }
    pb.h0 = read_state<C, T>(ctx, 5, "initial_h", pb.batch, hid);
    if (cell_ == CellKind::Lstm) {
      pb.c0 = read_state<C, T>(ctx, 6, "initial_c", pb.batch, hid);
      if (ctx.has_input(7)) {
        const ir::Tensor& p = ctx.input(7);
        if (p.dtype() != x.dtype()) ctx.fail("P dtype differs from X");
        check_shape(ctx, p, "P", {dirs, 3 * hid});
        std::vector<C> store;
        const C* values = to_compute<C, T>(p, store);
        pb.p.assign(values, values + p.numel());
      }
    }
    if (layout_ == 0) {
      pb.x = to_compute<C, T>(x, pb.x_store);
    } else {
      pb.x_store.resize(static_cast<size_t>(x.numel()));
      const T* xp = x.data<T>();
      for (int64_t t = 0; t < pb.seq; ++t)
        for (int64_t b = 0; b < pb.batch; ++b)
          for (int64_t i = 0; i < pb.input; ++i)
            pb.x_store[static_cast<size_t>((t * pb.batch + b) * pb.input + i)] =
                convert<C>(xp[(b * pb.seq + t) * pb.input + i]);
      pb.x = pb.x_store.data();
    }

    std::vector<C> y(static_cast<size_t>(pb.seq * dirs * pb.batch * hid), C(0));
    std::vector<C> yh(static_cast<size_t>(dirs * pb.batch * hid));
    std::vector<C> yc(cell_ == CellKind::Lstm ? yh.size() : 0);
    bool done = false;
    if constexpr (std::is_same_v<T, float>) {
      done = run_fused_cells(ctx, pb, y, yh, yc);
      if (!done) done = run_dnnl_rnn(ctx, pb, y, yh, yc);
    }
    if (!done)
      for (int64_t d = 0; d < dirs; ++d)
        run_direction(pb, d, reverse_ || d == 1, y, yh, yc, ctx.num_threads());

    if (ctx.num_outputs() > 0) {
      std::vector<int64_t> shape = layout_ == 0 ? std::vector<int64_t>{pb.seq, dirs, pb.batch, hid}
                                                : std::vector<int64_t>{pb.batch, pb.seq, dirs, hid};
      T* out = ctx.allocate_output(0, x.dtype(), shape).template data<T>();
      for (int64_t t = 0; t < pb.seq; ++t)
        for (int64_t d = 0; d < dirs; ++d)
          for (int64_t b = 0; b < pb.batch; ++b)
            for (int64_t h = 0; h < hid; ++h) {
              int64_t dst = layout_ == 0 ? ((t * dirs + d) * pb.batch + b) * hid + h
                                         : ((b * pb.seq + t) * dirs + d) * hid + h;
              out[dst] =
                  convert<T>(y[static_cast<size_t>(((t * dirs + d) * pb.batch + b) * hid + h)]);
            }
    }
    auto write_state = [&](size_t index, const std::vector<C>& state) {
      std::vector<int64_t> shape = layout_ == 0 ? std::vector<int64_t>{dirs, pb.batch, hid}
                                                : std::vector<int64_t>{pb.batch, dirs, hid};
      T* out = ctx.allocate_output(index, x.dtype(), shape).template data<T>();
      for (int64_t d = 0; d < dirs; ++d)
        for (int64_t b = 0; b < pb.batch; ++b)
          for (int64_t h = 0; h < hid; ++h) {
            int64_t dst = layout_ == 0 ? (d * pb.batch + b) * hid + h : (b * dirs + d) * hid + h;
            out[dst] = convert<T>(state[static_cast<size_t>((d * pb.batch + b) * hid + h)]);
          }
    };
    if (ctx.num_outputs() > 1) write_state(1, yh);
    if (ctx.num_outputs() > 2 && cell_ == CellKind::Lstm) write_state(2, yc);
  }

  template <typename C>
  C clip(C v) const {
    if (clip_ <= 0) return v;
    return std::max(static_cast<C>(-clip_), std::min(static_cast<C>(clip_), v));
  }

  // Runs one direction; writes its Y slices and final states.
  template <typename C>
  void run_direction(const Problem<C>& pb, int64_t d, bool reverse, std::vector<C>& y,
                     std::vector<C>& yh, std::vector<C>& yc, int threads) const {
    const int64_t hid = pb.hidden;
    const int64_t g = gates_;
    const int64_t rows = g * hid;
    const int64_t batch = pb.batch;
    const int64_t dirs = num_directions_;
    const C* w = pb.w + d * rows * pb.input;
    const C* r = pb.r + d * rows * hid;
    const C* wb = pb.b + d * 2 * rows;
    const C* rb = wb + rows;
    const Activation* act = activations_.data() + d * (cell_ == CellKind::Rnn ? 1 : g - 1);

    // Bias folded into the input projection, except GRU's recurrent bias of the hidden gate.
    std::vector<C> bias(static_cast<size_t>(rows));
    for (int64_t j = 0; j < rows; ++j) {
      bool keep_apart = cell_ == CellKind::Gru && j >= 2 * hid;
      bias[static_cast<size_t>(j)] = wb[j] + (keep_apart ? C(0) : rb[j]);
    }
    std::vector<C> xw(static_cast<size_t>(pb.seq * batch * rows));
    matmul_nt(pb.x, pb.input, pb.seq * batch, pb.input, w, rows, bias.data(), xw.data(), rows,
              threads);

    std::vector<C> h(pb.h0.begin() + d * batch * hid, pb.h0.begin() + (d + 1) * batch * hid);
    std::vector<C> c;
    if (cell_ == CellKind::Lstm)
      c.assign(pb.c0.begin() + d * batch * hid, pb.c0.begin() + (d + 1) * batch * hid);
    const C* peep = pb.p.empty() ? nullptr : pb.p.data() + d * 3 * hid;
    std::vector<C> hr(static_cast<size_t>(batch * rows));
    std::vector<C> scratch(static_cast<size_t>(batch * hid));
    auto at = [](std::vector<C>& v, int64_t i) -> C& { return v[static_cast<size_t>(i)]; };

    for (int64_t step = 0; step < pb.seq; ++step) {
      // GRU without linear_before_reset multiplies the reset gate in before the hidden product.
      const int64_t first_rows = cell_ == CellKind::Gru && !linear_before_reset_ ? 2 * hid : rows;
      matmul_nt(h.data(), hid, batch, hid, r, first_rows, static_cast<const C*>(nullptr), hr.data(),
                rows, threads);
      auto time_of = [&](int64_t b) -> int64_t {
        int64_t len = pb.lengths[static_cast<size_t>(b)];
        if (step >= len) return -1;
        return reverse ? len - 1 - step : step;
      };
      if (cell_ == CellKind::Rnn) {
        for (int64_t b = 0; b < batch; ++b) {
          int64_t t = time_of(b);
          if (t < 0) continue;
          const C* xr = xw.data() + (t * batch + b) * rows;
          for (int64_t k = 0; k < hid; ++k)
            at(h, b * hid + k) = act[0](clip(xr[k] + at(hr, b * rows + k)));
        }
      } else if (cell_ == CellKind::Gru) {
        std::vector<C> z(static_cast<size_t>(batch * hid)), rg(static_cast<size_t>(batch * hid));
        for (int64_t b = 0; b < batch; ++b) {
          int64_t t = time_of(b);
          if (t < 0) continue;
          const C* xr = xw.data() + (t * batch + b) * rows;
          for (int64_t k = 0; k < hid; ++k) {
            at(z, b * hid + k) = act[0](clip(xr[k] + at(hr, b * rows + k)));
            at(rg, b * hid + k) = act[0](clip(xr[hid + k] + at(hr, b * rows + hid + k)));
            at(scratch, b * hid + k) = at(rg, b * hid + k) * at(h, b * hid + k);
          }
        }
        if (!linear_before_reset_)
          matmul_nt(scratch.data(), hid, batch, hid, r + 2 * hid * hid, hid, rb + 2 * hid,
                    hr.data() + 2 * hid, rows, threads);
        for (int64_t b = 0; b < batch; ++b) {
          int64_t t = time_of(b);
          if (t < 0) continue;
          const C* xr = xw.data() + (t * batch + b) * rows;
          for (int64_t k = 0; k < hid; ++k) {
            C lin = at(hr, b * rows + 2 * hid + k);
            C pre = linear_before_reset_
                        ? xr[2 * hid + k] + at(rg, b * hid + k) * (lin + rb[2 * hid + k])
                        : xr[2 * hid + k] + lin;
            C cand = act[1](clip(pre));
            C zk = at(z, b * hid + k);
            at(h, b * hid + k) = (C(1) - zk) * cand + zk * at(h, b * hid + k);
          }
        }
      } else {
        for (int64_t b = 0; b < batch; ++b) {
          int64_t t = time_of(b);
          if (t < 0) continue;
          const C* xr = xw.data() + (t * batch + b) * rows;
          const C* hrr = hr.data() + b * rows;
          for (int64_t k = 0; k < hid; ++k) {
            C c_prev = at(c, b * hid + k);
            C pi = xr[k] + hrr[k] + (peep ? peep[k] * c_prev : C(0));
            C pf = xr[2 * hid + k] + hrr[2 * hid + k] + (peep ? peep[2 * hid + k] * c_prev : C(0));
            C pc = xr[3 * hid + k] + hrr[3 * hid + k];
            C ig = act[0](clip(pi));
            C fg = input_forget_ ? C(1) - ig : act[0](clip(pf));
            C cand = act[1](clip(pc));
            C c_new = fg * c_prev + ig * cand;
            C po = xr[hid + k] + hrr[hid + k] + (peep ? peep[hid + k] * c_new : C(0));
            C og = act[0](clip(po));
            at(c, b * hid + k) = c_new;
            at(h, b * hid + k) = og * act[2](c_new);
          }
        }
      }
      for (int64_t b = 0; b < batch; ++b) {
        int64_t t = time_of(b);
        if (t < 0) continue;
        std::copy(h.begin() + b * hid, h.begin() + (b + 1) * hid,
                  y.begin() + ((t * dirs + d) * batch + b) * hid);
      }
    }
    std::copy(h.begin(), h.end(), yh.begin() + d * batch * hid);
    if (cell_ == CellKind::Lstm) std::copy(c.begin(), c.end(), yc.begin() + d * batch * hid);
  }

  // The fused recurrent step (rnn_internal.h) for the common float32 forms: an LSTM, or a GRU
  // with linear_before_reset (PyTorch's form), default activations, no clip, no peepholes, no
  // input_forget. One product of X with W for the whole sequence and both directions, then per
  // step the recurrent product and the gates on register-resident blocks of 16 units, the two
  // directions on two threads when the run has them. At batch 8 and above oneDNN's RNN
  // primitives take over where they fit: they amortize each step's weight reads over the rows.
  struct FusedPlan {
    std::vector<float> packed;  // pack_recurrent of R
    std::vector<float> bias;    // [dirs, G*H]: Wb + Rb, the GRU hidden gate's Wb alone
  };

  bool default_activations() const {
    const size_t per_direction = cell_ == CellKind::Lstm ? 3 : 2;
    for (size_t i = 0; i < activations_.size(); ++i) {
      const Activation::Fn want =
          i % per_direction == 0 ? Activation::Fn::Sigmoid : Activation::Fn::Tanh;
      if (activations_[i].fn != want) return false;
    }
    return true;
  }

  bool fits_fused(const Problem<float>& pb) const {
    if (cell_ == CellKind::Rnn || (cell_ == CellKind::Gru && !linear_before_reset_)) return false;
    if (clip_ > 0 || input_forget_ || !pb.p.empty() || !default_activations()) return false;
    return pb.batch < 8 || !fits_dnnl(pb);
  }

  std::shared_ptr<const FusedPlan> make_fused_plan(const Problem<float>& pb) const {
    const int64_t dirs = num_directions_, hid = pb.hidden, rows = gates_ * hid;
    const auto cell =
        cell_ == CellKind::Lstm ? rnn_cell::Cell::Lstm : rnn_cell::Cell::GruLinearBeforeReset;
    auto plan = std::make_shared<FusedPlan>();
    plan->packed = rnn_cell::pack_recurrent(cell, pb.r, dirs, hid);
    plan->bias.resize(static_cast<size_t>(dirs * rows));
    for (int64_t d = 0; d < dirs; ++d) {
      const float* wb = pb.b + d * 2 * rows;
      const float* rb = wb + rows;
      for (int64_t j = 0; j < rows; ++j) {
        const bool keep_apart = cell_ == CellKind::Gru && j >= 2 * hid;
        plan->bias[static_cast<size_t>(d * rows + j)] = wb[j] + (keep_apart ? 0.0f : rb[j]);
      }
    }
    return plan;
  }

  bool run_fused_cells(runtime::KernelContext& ctx, const Problem<float>& pb, std::vector<float>& y,
                       std::vector<float>& yh, std::vector<float>& yc) const {
    if (!fits_fused(pb)) return false;
    const int64_t dirs = num_directions_, hid = pb.hidden, rows = gates_ * hid;
    const int64_t batch = pb.batch;
    const auto cell =
        cell_ == CellKind::Lstm ? rnn_cell::Cell::Lstm : rnn_cell::Cell::GruLinearBeforeReset;
    std::shared_ptr<const FusedPlan> plan =
        weights_constant_ ? fused_cache_.get({pb.input, hid}, [&] { return make_fused_plan(pb); })
                          : make_fused_plan(pb);
    // X W^T + bias for every step, row and direction at once: W is [dirs * G*H, input].
    std::vector<float> xw(static_cast<size_t>(pb.seq * batch * dirs * rows));
    matmul_nt(pb.x, pb.input, pb.seq * batch, pb.input, pb.w, dirs * rows, plan->bias.data(),
              xw.data(), dirs * rows, ctx.num_threads());
    std::copy(pb.h0.begin(), pb.h0.end(), yh.begin());
    if (cell_ == CellKind::Lstm) std::copy(pb.c0.begin(), pb.c0.end(), yc.begin());
    const int64_t per_dir = rnn_cell::packed_direction_size(cell, hid);
    auto run_one = [&](int64_t d) {
      rnn_cell::Direction dir;
      dir.cell = cell;
      dir.seq = pb.seq;
      dir.batch = batch;
      dir.hidden = hid;
      dir.packed = plan->packed.data() + d * per_dir;
      dir.xw = xw.data() + d * rows;
      dir.ldx = dirs * rows;
      dir.rb_hidden = cell_ == CellKind::Gru ? pb.b + d * 2 * rows + rows + 2 * hid : nullptr;
      dir.lengths = pb.lengths.data();
      dir.reverse = reverse_ || d == 1;
      dir.h = yh.data() + d * batch * hid;
      dir.c = cell_ == CellKind::Lstm ? yc.data() + d * batch * hid : nullptr;
      dir.y = y.data() + d * batch * hid;
      dir.y_step = dirs * batch * hid;
      rnn_cell::run_direction(dir);
    };
    parallel_for(dirs, 1, ctx.num_threads(), [&](int64_t begin, int64_t end) {
      for (int64_t d = begin; d < end; ++d) run_one(d);
    });
    return true;
  }

  // An LSTM or GRU as oneDNN's lstm_forward / gru_forward / lbr_gru_forward primitive: the
  // whole sequence, both directions, gates and products in one JIT-compiled call (the driver
  // above makes one sgemm call per step and evaluates the gates with scalar libm calls). For the
  // common form only: float32, the default activations, no clip, no input_forget, no
  // peepholes, every sequence of full length. Weights are rearranged to oneDNN's gate order
  // (LSTM i, f, c, o where ONNX has i, o, f, c; GRU z, r, h in both) and packed once when W, R
  // and B are constants.
  struct DnnlLstmPlan {
    dnnl::primitive primitive;
    dnnl::memory::desc src_layer, src_iter, weights_layer, weights_iter, user_weights_layer,
        user_weights_iter, bias, dst_layer, dst_iter;
    dnnl::memory packed_layer, packed_iter;  // constant weights, packed (else empty)
    std::vector<float> bias_values;          // constant B, summed and rearranged (else empty)
  };

  bool fits_dnnl(const Problem<float>& pb) const {
    if (cell_ == CellKind::Rnn || clip_ > 0 || input_forget_ || !pb.p.empty()) return false;
    if (pb.seq == 0 || pb.batch == 0) return false;
    // oneDNN 2.6's brgemm RNN multiplies the layer weights step by step: at small batches it
    // reads them once per step, where the driver makes one product for the whole sequence. It
    // wins while those weights are no larger than the recurrent ones (measured on an LSTM
    // tagger at batch 1: input 128, hidden 256: 2.7 ms against 4.2; input 512: 13.6 against
    // 5.3) or the batch amortizes the reads.
    if (pb.batch < 8 && pb.input > pb.hidden) return false;
    for (int64_t len : pb.lengths)
      if (len != pb.seq) return false;
    return default_activations();
  }

  // oneDNN's gate g is ONNX's gate onnx_gate(g).
  int64_t onnx_gate(int64_t g) const {
    static constexpr int64_t kLstm[4] = {0, 2, 3, 1};  // i, f, c, o <- ONNX i, o, f, c
    return cell_ == CellKind::Lstm ? kLstm[g] : g;
  }

  // W [dirs, G*H, in] -> ldigo [1, dirs, in, G, H] in oneDNN's gate order.
  void rearrange_weights(const float* w, int64_t dirs, int64_t in, int64_t hid, float* out) const {
    const int64_t gates = gates_;
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t k = 0; k < in; ++k)
        for (int64_t g = 0; g < gates; ++g)
          for (int64_t h = 0; h < hid; ++h)
            out[((d * in + k) * gates + g) * hid + h] =
                w[static_cast<size_t>((d * gates * hid + onnx_gate(g) * hid + h) * in + k)];
  }

  // The bias gates oneDNN takes: G, or 4 for a GRU with linear_before_reset (its last one is
  // the candidate's Rb, which it applies inside the reset product).
  int64_t bias_gates() const { return linear_before_reset_ ? 4 : gates_; }

  // B [dirs, 2*G*H] (Wb then Rb) -> ldgo [1, dirs, bias_gates(), H] in oneDNN's gate order:
  // Wb + Rb per gate, except a linear-before-reset GRU's candidate, whose Wb and Rb stay apart.
  std::vector<float> rearrange_bias(const float* b, int64_t dirs, int64_t hid) const {
    const int64_t gates = gates_, bg = bias_gates();
    std::vector<float> out(static_cast<size_t>(dirs * bg * hid));
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t g = 0; g < bg; ++g)
        for (int64_t h = 0; h < hid; ++h) {
          const int64_t og = g < gates ? onnx_gate(g) : gates - 1;
          const size_t wb = static_cast<size_t>(d * 2 * gates * hid + og * hid + h);
          const size_t rb = wb + static_cast<size_t>(gates * hid);
          float v = b[wb] + b[rb];
          if (linear_before_reset_ && g == gates - 1) v = b[wb];  // candidate: Wb alone
          if (linear_before_reset_ && g == gates) v = b[rb];      // then its Rb
          out[static_cast<size_t>((d * bg + g) * hid + h)] = v;
        }
    return out;
  }

  std::shared_ptr<const DnnlLstmPlan> make_lstm_plan(const runtime::KernelContext& ctx,
                                                     const Problem<float>& pb) const {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const int64_t dirs = num_directions_, hid = pb.hidden;
    auto plan = std::make_shared<DnnlLstmPlan>();
    plan->src_layer = dnnl::memory::desc({pb.seq, pb.batch, pb.input}, dt::f32, tag::tnc);
    plan->src_iter = dnnl::memory::desc({1, dirs, pb.batch, hid}, dt::f32, tag::ldnc);
    const int64_t gates = gates_;
    plan->user_weights_layer =
        dnnl::memory::desc({1, dirs, pb.input, gates, hid}, dt::f32, tag::ldigo);
    plan->user_weights_iter = dnnl::memory::desc({1, dirs, hid, gates, hid}, dt::f32, tag::ldigo);
    plan->bias = dnnl::memory::desc({1, dirs, bias_gates(), hid}, dt::f32, tag::ldgo);
    plan->dst_layer = dnnl::memory::desc({pb.seq, pb.batch, dirs * hid}, dt::f32, tag::tnc);
    plan->dst_iter = plan->src_iter;
    const auto direction = dirs == 2  ? dnnl::rnn_direction::bidirectional_concat
                           : reverse_ ? dnnl::rnn_direction::unidirectional_right2left
                                      : dnnl::rnn_direction::unidirectional_left2right;
    auto any = [](const dnnl::memory::desc& md) {
      return dnnl::memory::desc(md.dims(), md.data_type(), tag::any);
    };
    const auto inference = dnnl::prop_kind::forward_inference;
    const dnnl::memory::desc wl_any = any(plan->user_weights_layer);
    const dnnl::memory::desc wi_any = any(plan->user_weights_iter);
    auto finish = [&](const auto& pd) {
      plan->weights_layer = pd.weights_layer_desc();
      plan->weights_iter = pd.weights_iter_desc();
    };
    if (cell_ == CellKind::Lstm) {
      dnnl::lstm_forward::desc desc(inference, direction, plan->src_layer, plan->src_iter,
                                    plan->src_iter, wl_any, wi_any, plan->bias, plan->dst_layer,
                                    plan->dst_iter, plan->dst_iter);
      dnnl::lstm_forward::primitive_desc pd(desc, user_scratchpad_attr(), dnnl_engine());
      finish(pd);
      plan->primitive = dnnl::lstm_forward(pd);
    } else if (linear_before_reset_) {
      dnnl::lbr_gru_forward::desc desc(inference, direction, plan->src_layer, plan->src_iter,
                                       wl_any, wi_any, plan->bias, plan->dst_layer, plan->dst_iter);
      dnnl::lbr_gru_forward::primitive_desc pd(desc, user_scratchpad_attr(), dnnl_engine());
      finish(pd);
      plan->primitive = dnnl::lbr_gru_forward(pd);
    } else {
      dnnl::gru_forward::desc desc(inference, direction, plan->src_layer, plan->src_iter, wl_any,
                                   wi_any, plan->bias, plan->dst_layer, plan->dst_iter);
      dnnl::gru_forward::primitive_desc pd(desc, user_scratchpad_attr(), dnnl_engine());
      finish(pd);
      plan->primitive = dnnl::gru_forward(pd);
    }
    if (weights_constant_) {
      std::vector<float> wl(static_cast<size_t>(dirs * pb.input * gates * hid));
      std::vector<float> wi(static_cast<size_t>(dirs * hid * gates * hid));
      rearrange_weights(pb.w, dirs, pb.input, hid, wl.data());
      rearrange_weights(pb.r, dirs, hid, hid, wi.data());
      plan->packed_layer = dnnl::memory(plan->weights_layer, dnnl_engine());
      plan->packed_iter = dnnl::memory(plan->weights_iter, dnnl_engine());
      reorder_memory(wrap_memory(wl.data(), plan->user_weights_layer), plan->packed_layer);
      reorder_memory(wrap_memory(wi.data(), plan->user_weights_iter), plan->packed_iter);
      plan->bias_values = rearrange_bias(pb.b, dirs, hid);
    }
    (void)ctx;
    return plan;
  }

  // Runs the LSTM / GRU through oneDNN when it fits; y, yh, yc as run_direction leaves them.
  bool run_dnnl_rnn(runtime::KernelContext& ctx, const Problem<float>& pb, std::vector<float>& y,
                    std::vector<float>& yh, std::vector<float>& yc) const {
    if (!fits_dnnl(pb)) return false;
    const int64_t dirs = num_directions_, hid = pb.hidden;
    OmpThreadScope threads(ctx.num_threads());
    std::shared_ptr<const DnnlLstmPlan> plan;
    try {
      plan = lstm_cache_.get({pb.seq, pb.batch, pb.input, hid},
                             [&] { return make_lstm_plan(ctx, pb); });
    } catch (const dnnl::error&) {
      return false;  // oneDNN declines: the driver runs it
    }
    const DnnlLstmPlan& p = *plan;
    dnnl::memory weights_layer = p.packed_layer, weights_iter = p.packed_iter;
    std::vector<float> bias = p.bias_values;
    std::vector<float> wl, wi;
    if (!weights_layer) {  // weights computed in the graph: rearranged and reordered per run
      wl.resize(static_cast<size_t>(dirs * pb.input * gates_ * hid));
      wi.resize(static_cast<size_t>(dirs * hid * gates_ * hid));
      rearrange_weights(pb.w, dirs, pb.input, hid, wl.data());
      rearrange_weights(pb.r, dirs, hid, hid, wi.data());
      weights_layer = dnnl::memory(p.weights_layer, dnnl_engine());
      weights_iter = dnnl::memory(p.weights_iter, dnnl_engine());
      reorder_memory(wrap_memory(wl.data(), p.user_weights_layer), weights_layer);
      reorder_memory(wrap_memory(wi.data(), p.user_weights_iter), weights_iter);
      bias = rearrange_bias(pb.b, dirs, hid);
    }
    std::vector<float> dst(static_cast<size_t>(pb.seq * pb.batch * dirs * hid));
    std::vector<float> c0 = pb.c0;
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC_LAYER, wrap_memory(pb.x, p.src_layer)},
        {DNNL_ARG_SRC_ITER, wrap_memory(pb.h0.data(), p.src_iter)},
        {DNNL_ARG_WEIGHTS_LAYER, weights_layer},
        {DNNL_ARG_WEIGHTS_ITER, weights_iter},
        {DNNL_ARG_BIAS, wrap_memory(bias.data(), p.bias)},
        {DNNL_ARG_DST_LAYER, wrap_memory(dst.data(), p.dst_layer)},
        {DNNL_ARG_DST_ITER, wrap_memory(yh.data(), p.dst_iter)}};
    if (cell_ == CellKind::Lstm) {
      args[DNNL_ARG_SRC_ITER_C] = wrap_memory(c0.data(), p.src_iter);
      args[DNNL_ARG_DST_ITER_C] = wrap_memory(yc.data(), p.dst_iter);
    }
    execute_primitive(ctx, p.primitive, args);
    // dst [seq, batch, dirs * H] -> y [seq, dirs, batch, H]
    for (int64_t t = 0; t < pb.seq; ++t)
      for (int64_t d = 0; d < dirs; ++d)
        for (int64_t b = 0; b < pb.batch; ++b)
          std::copy_n(dst.data() + (t * pb.batch + b) * dirs * hid + d * hid, hid,
                      y.data() + ((t * dirs + d) * pb.batch + b) * hid);
    return true;
  }

  CellKind cell_;
  int64_t gates_ = 1;
  int64_t num_directions_ = 1;
  bool reverse_ = false;
  int64_t layout_ = 0;
  int64_t hidden_size_ = -1;
  float clip_ = 0;
  bool linear_before_reset_ = false;
  bool input_forget_ = false;
  std::vector<Activation> activations_;
  bool weights_constant_ = false;  // W, R and B (when given) are initializers
  PlanCache<DnnlLstmPlan> lstm_cache_;
  PlanCache<FusedPlan> fused_cache_;
};

class RnnKernel final : public RecurrentKernel {
 public:
  explicit RnnKernel(const runtime::KernelInit& init) : RecurrentKernel(init, CellKind::Rnn) {}
};
class GruKernel final : public RecurrentKernel {
 public:
  explicit GruKernel(const runtime::KernelInit& init) : RecurrentKernel(init, CellKind::Gru) {}
};
class LstmKernel final : public RecurrentKernel {
 public:
  explicit LstmKernel(const runtime::KernelInit& init) : RecurrentKernel(init, CellKind::Lstm) {}
};

}  // namespace

void register_rnn_kernels(runtime::KernelRegistry& r) {
  using RnnTypes = TypeList<float, double, Float16>;
  r.add<RnnKernel>(ops::OpKind::RNN, dtypes_of(RnnTypes{}));
  r.add<GruKernel>(ops::OpKind::GRU, dtypes_of(RnnTypes{}));
  r.add<LstmKernel>(ops::OpKind::LSTM, dtypes_of(RnnTypes{}));
}

}  // namespace switchyard::cpu
