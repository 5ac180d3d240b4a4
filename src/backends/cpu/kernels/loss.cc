// CPU kernels of the loss family: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss over
// inputs (N, C, d1..dk), with reduction none/sum/mean, optional class weights and ignore_index.
#include <limits>
#include <optional>

#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

namespace {

enum class Reduction { None, Sum, Mean };

Reduction parse_reduction(const ir::Node& node) {
  std::string r = node.attr_string("reduction", "mean");
  if (r == "none") return Reduction::None;
  if (r == "sum") return Reduction::Sum;
  SY_CHECK(r == "mean", InvalidModel, "{}: reduction must be 'none', 'sum' or 'mean', got '{}'",
           node.describe(), r);
  return Reduction::Mean;
}

std::optional<int64_t> read_ignore_index(const ir::Node& node) {
  if (!node.has_attribute("ignore_index")) return std::nullopt;
  return node.attr_int("ignore_index");
}

// Log-softmax over axis 1 of x viewed as (n, c, d), in C.
template <typename T, typename C>
void log_softmax_axis1(const T* x, C* out, int64_t n, int64_t c, int64_t d, int threads) {
  parallel_for(n, std::max<int64_t>(1, 4096 / std::max<int64_t>(c * d, 1)), threads,
               [&](int64_t b, int64_t e) {
                 std::vector<C> mx(static_cast<size_t>(d));
                 std::vector<C> sum(static_cast<size_t>(d));
                 for (int64_t i = b; i < e; ++i) {
                   const T* p = x + i * c * d;
                   C* q = out + i * c * d;
                   std::fill(mx.begin(), mx.end(), -std::numeric_limits<C>::infinity());
                   std::fill(sum.begin(), sum.end(), C(0));
                   for (int64_t k = 0; k < c; ++k)
                     for (int64_t j = 0; j < d; ++j) {
                       C v = convert<C>(p[k * d + j]);
                       C& m = mx[static_cast<size_t>(j)];
                       m = v > m || v != v ? v : m;
                     }
                   for (int64_t k = 0; k < c; ++k)
                     for (int64_t j = 0; j < d; ++j)
                       sum[static_cast<size_t>(j)] +=
                           std::exp(convert<C>(p[k * d + j]) - mx[static_cast<size_t>(j)]);
                   for (int64_t j = 0; j < d; ++j)
                     sum[static_cast<size_t>(j)] = std::log(sum[static_cast<size_t>(j)]);
                   for (int64_t k = 0; k < c; ++k)
                     for (int64_t j = 0; j < d; ++j)
                       q[k * d + j] = (convert<C>(p[k * d + j]) - mx[static_cast<size_t>(j)]) -
                                      sum[static_cast<size_t>(j)];
                 }
               });
}

// kSoftmax: SoftmaxCrossEntropyLoss (log-softmax of the scores first, optional log_prob
// output); else NegativeLogLikelihoodLoss on log-probabilities.
template <bool kSoftmax>
class LossKernel : public runtime::Kernel {
 public:
  explicit LossKernel(const runtime::KernelInit& init)
      : reduction_(parse_reduction(init.node)), ignore_index_(read_ignore_index(init.node)) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& target = ctx.input(1);
    if (x.rank() < 2) ctx.fail("input must have rank >= 2 (N, C, ...), got {}", x.rank());
    if (target.dtype() != DType::Int32 && target.dtype() != DType::Int64)
      ctx.fail("target must be int32 or int64, got {}", ir::dtype_name(target.dtype()));
    std::vector<int64_t> target_shape = x.shape();
    target_shape.erase(target_shape.begin() + 1);
    if (target.shape() != target_shape)
      ctx.fail("target has shape {}, expected {} for input {}", ir::shape_to_string(target.shape()),
               ir::shape_to_string(target_shape), ir::shape_to_string(x.shape()));
    int64_t n = x.dim(0);
    int64_t c = x.dim(1);
    int64_t d = 1;
    for (int64_t i = 2; i < x.rank(); ++i) d *= x.dim(i);
    const ir::Tensor* weight = nullptr;
    if (ctx.has_input(2)) {
      weight = &ctx.input(2);
      if (weight->dtype() != x.dtype())
        ctx.fail("weight has dtype {}, expected {} like the input", ir::dtype_name(weight->dtype()),
                 ir::dtype_name(x.dtype()));
      if (weight->rank() != 1 || weight->dim(0) != c)
        ctx.fail("weight has shape {}, expected [{}]", ir::shape_to_string(weight->shape()), c);
    }
    std::vector<int64_t> labels = target.to_int_vector();
    for (size_t i = 0; i < labels.size(); ++i) {
      int64_t t = labels[i];
      if (ignore_index_ && t == *ignore_index_) continue;
      if (t < 0 || t >= c)
        ctx.fail("target value {} at flat index {} is out of range for {} classes", t, i, c);
    }
    ir::Tensor& loss_out = ctx.allocate_output(
        0, x.dtype(), reduction_ == Reduction::None ? target_shape : std::vector<int64_t>{});
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      std::vector<C> log_prob;
      const T* xs = x.data<T>();
      if constexpr (kSoftmax) {
        log_prob.resize(static_cast<size_t>(x.numel()));
        log_softmax_axis1<T, C>(xs, log_prob.data(), n, c, d, ctx.num_threads());
        if (ctx.num_outputs() > 1) {
          ir::Tensor& lp = ctx.allocate_output(1, x.dtype(), x.shape());
          for (int64_t i = 0; i < x.numel(); ++i)
            lp.data<T>()[i] = convert<T>(log_prob[static_cast<size_t>(i)]);
        }
      }
      std::vector<C> w;
      if (weight) {
        w.resize(static_cast<size_t>(c));
        for (int64_t k = 0; k < c; ++k)
          w[static_cast<size_t>(k)] = convert<C>(weight->data<T>()[k]);
      }
      T* out = loss_out.data<T>();
      double total = 0;
      double total_weight = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < d; ++j) {
          size_t flat = static_cast<size_t>(i * d + j);
          int64_t t = labels[flat];
          C loss = 0;
          C wt = 0;
          if (!(ignore_index_ && t == *ignore_index_)) {
            int64_t at = (i * c + t) * d + j;
            C lp = kSoftmax ? log_prob[static_cast<size_t>(at)] : convert<C>(xs[at]);
            wt = weight ? w[static_cast<size_t>(t)] : C(1);
            loss = -lp * wt;
          }
          if (reduction_ == Reduction::None) {
            out[flat] = convert<T>(loss);
          } else {
            total += static_cast<double>(loss);
            total_weight += static_cast<double>(wt);
          }
        }
      if (reduction_ == Reduction::Sum) out[0] = convert<T>(total);
      if (reduction_ == Reduction::Mean) out[0] = convert<T>(total / total_weight);
    });
  }

 private:
  Reduction reduction_;
  std::optional<int64_t> ignore_index_;
};

}  // namespace

void register_loss_kernels(runtime::KernelRegistry& r) {
  using ops::OpKind;
  auto floats = dtypes_of(FloatTypes{});
  r.add<LossKernel<false>>(OpKind::NegativeLogLikelihoodLoss, floats);
  r.add<LossKernel<true>>(OpKind::SoftmaxCrossEntropyLoss, floats);
}

}  // namespace switchyard::cpu
