// CPU kernels of the rnn family: RNN, GRU and LSTM over one shared driver. The input projection
// of every time step is one matrix product up front; each step then adds the recurrent product
// and applies the cell's gates. Half types compute in float.
#include <algorithm>
#include <cctype>
#include <string>

#include "backends/cpu/kernels/common.h"
#include "backends/cpu/kernels/dnnl_util.h"
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

template <typename C, typename T>
std::vector<C> to_compute(const ir::Tensor& t) {
  std::vector<C> v(static_cast<size_t>(t.numel()));
  const T* p = t.data<T>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = convert<C>(p[i]);
  return v;
}

class RecurrentKernel : public backends::Kernel {
 public:
  RecurrentKernel(const backends::KernelInit& init, CellKind cell) : cell_(cell) {
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

  void run(backends::KernelContext& ctx) const override {
    dispatch(TypeList<float, double, Float16>{}, ctx.input(0).dtype(), ctx.node(),
             [&](auto tag) { run_typed<decltype(tag)>(ctx); });
  }

 private:
  // Inputs converted to the compute type, X in [seq, batch, input] order.
  template <typename C>
  struct Problem {
    int64_t seq = 0, batch = 0, input = 0, hidden = 0;
    std::vector<C> x, w, r, b, h0, c0, p;
    std::vector<int64_t> lengths;
  };

  void check_shape(const backends::KernelContext& ctx, const ir::Tensor& t, const char* what,
                   const std::vector<int64_t>& expected) const {
    if (t.shape() != expected)
      ctx.fail("{} has shape {}, expected {}", what, ir::shape_to_string(t.shape()),
               ir::shape_to_string(expected));
  }

  // A state input given as [dirs, batch, hidden] (layout 0) or [batch, dirs, hidden] (layout 1),
  // returned in [dirs, batch, hidden] order.
  template <typename C, typename T>
  std::vector<C> read_state(const backends::KernelContext& ctx, size_t index, const char* what,
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
  void run_typed(backends::KernelContext& ctx) const {
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
    pb.w = to_compute<C, T>(w);
    pb.r = to_compute<C, T>(r);
    if (ctx.has_input(3)) {
      const ir::Tensor& b = ctx.input(3);
      if (b.dtype() != x.dtype()) ctx.fail("B dtype differs from X");
      check_shape(ctx, b, "B", {dirs, 2 * g * hid});
      pb.b = to_compute<C, T>(b);
    } else {
      pb.b.assign(static_cast<size_t>(dirs * 2 * g * hid), C(0));
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
        pb.p = to_compute<C, T>(p);
      }
    }
    pb.x.resize(static_cast<size_t>(x.numel()));
    const T* xp = x.data<T>();
    for (int64_t t = 0; t < pb.seq; ++t)
      for (int64_t b = 0; b < pb.batch; ++b)
        for (int64_t i = 0; i < pb.input; ++i) {
          int64_t src =
              layout_ == 0 ? (t * pb.batch + b) * pb.input + i : (b * pb.seq + t) * pb.input + i;
          pb.x[static_cast<size_t>((t * pb.batch + b) * pb.input + i)] = convert<C>(xp[src]);
        }

    std::vector<C> y(static_cast<size_t>(pb.seq * dirs * pb.batch * hid), C(0));
    std::vector<C> yh(static_cast<size_t>(dirs * pb.batch * hid));
    std::vector<C> yc(cell_ == CellKind::Lstm ? yh.size() : 0);
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
    const C* w = pb.w.data() + d * rows * pb.input;
    const C* r = pb.r.data() + d * rows * hid;
    const C* wb = pb.b.data() + d * 2 * rows;
    const C* rb = wb + rows;
    const Activation* act = activations_.data() + d * (cell_ == CellKind::Rnn ? 1 : g - 1);

    // Bias folded into the input projection, except GRU's recurrent bias of the hidden gate.
    std::vector<C> bias(static_cast<size_t>(rows));
    for (int64_t j = 0; j < rows; ++j) {
      bool keep_apart = cell_ == CellKind::Gru && j >= 2 * hid;
      bias[static_cast<size_t>(j)] = wb[j] + (keep_apart ? C(0) : rb[j]);
    }
    std::vector<C> xw(static_cast<size_t>(pb.seq * batch * rows));
    matmul_nt(pb.x.data(), pb.input, pb.seq * batch, pb.input, w, rows, bias.data(), xw.data(),
              rows, threads);

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
};

class RnnKernel final : public RecurrentKernel {
 public:
  explicit RnnKernel(const backends::KernelInit& init) : RecurrentKernel(init, CellKind::Rnn) {}
};
class GruKernel final : public RecurrentKernel {
 public:
  explicit GruKernel(const backends::KernelInit& init) : RecurrentKernel(init, CellKind::Gru) {}
};
class LstmKernel final : public RecurrentKernel {
 public:
  explicit LstmKernel(const backends::KernelInit& init) : RecurrentKernel(init, CellKind::Lstm) {}
};

}  // namespace

void register_rnn_kernels(backends::KernelRegistry& r) {
  using RnnTypes = TypeList<float, double, Float16>;
  r.add<RnnKernel>(ops::OpKind::RNN, dtypes_of(RnnTypes{}));
  r.add<GruKernel>(ops::OpKind::GRU, dtypes_of(RnnTypes{}));
  r.add<LstmKernel>(ops::OpKind::LSTM, dtypes_of(RnnTypes{}));
}

}  // namespace switchyard::cpu
