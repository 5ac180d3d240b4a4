// Einsum (any equation: diagonals, ellipsis broadcasting, sums, pairwise contractions through
// batched products) and Det (LU with partial pivoting).
#include <cmath>
#include <map>

#include "backends/cpu/kernels/matmul_internal.h"
#include "ops/matmul_einsum.h"

namespace switchyard::cpu {

namespace {

// An operand in compute type with one label per dim.
template <typename C>
struct Labeled {
  std::vector<int> labels;
  std::vector<int64_t> dims;
  std::vector<C> data;
};

bool contains(const std::vector<int>& v, int l) {
  return std::find(v.begin(), v.end(), l) != v.end();
}

// A new operand with labels `out` (unique; broadcast to `size` where src has 1 or lacks them)
// and the labels `summed` of src reduced away. Repeated labels in src read its diagonal.
template <typename C>
Labeled<C> transform(const Labeled<C>& src, const std::vector<int>& out,
                     const std::vector<int>& summed, const std::vector<int64_t>& size) {
  std::vector<int64_t> src_strides = strides_of(src.dims);
  auto stride_of = [&](int l) {
    int64_t s = 0;
    for (size_t i = 0; i < src.labels.size(); ++i)
      if (src.labels[i] == l && src.dims[i] != 1) s += src_strides[i];
    return s;
  };
  auto src_dim = [&](int l) {
    for (size_t i = 0; i < src.labels.size(); ++i)
      if (src.labels[i] == l) return src.dims[i];
    return int64_t{1};
  };
  Labeled<C> r;
  r.labels = out;
  for (int l : out) r.dims.push_back(size[static_cast<size_t>(l)]);
  int64_t total = ir::checked_numel(r.dims);
  r.data.assign(static_cast<size_t>(total), C(0));
  // Offsets of every combination of summed labels.
  std::vector<int64_t> sum_offsets = {0};
  for (int l : summed) {
    std::vector<int64_t> next;
    int64_t d = src_dim(l), s = stride_of(l);
    for (int64_t base : sum_offsets)
      for (int64_t i = 0; i < d; ++i) next.push_back(base + i * s);
    sum_offsets = std::move(next);
  }
  std::vector<int64_t> out_strides;
  for (int l : out) out_strides.push_back(stride_of(l));
  std::vector<int64_t> idx(out.size(), 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < total; ++i) {
    C acc = C(0);
    for (int64_t so : sum_offsets) acc += src.data[static_cast<size_t>(offset + so)];
    r.data[static_cast<size_t>(i)] = acc;
    for (size_t k = out.size(); k-- > 0;) {
      offset += out_strides[k];
      if (++idx[k] < r.dims[k]) break;
      offset -= out_strides[k] * idx[k];
      idx[k] = 0;
    }
  }
  return r;
}

// Unique labels in order of first appearance.
std::vector<int> unique_labels(const std::vector<int>& labels) {
  std::vector<int> u;
  for (int l : labels)
    if (!contains(u, l)) u.push_back(l);
  return u;
}

// Sums away labels of `t` not in `keep`, keeping the rest in first-appearance order.
template <typename C>
Labeled<C> keep_only(const Labeled<C>& t, const std::vector<int>& keep,
                     const std::vector<int64_t>& size) {
  std::vector<int> kept, summed;
  for (int l : unique_labels(t.labels)) (contains(keep, l) ? kept : summed).push_back(l);
  if (summed.empty() && kept == t.labels) return t;
  return transform(t, kept, summed, size);
}

// Contracts a and b over their shared labels not in `keep`; shared kept labels are batch dims.
template <typename C>
Labeled<C> contract(const Labeled<C>& a, const Labeled<C>& b, const std::vector<int>& keep,
                    const std::vector<int64_t>& size, int threads) {
  std::vector<int> batch, a_only, b_only, reduced;
  for (int l : a.labels) {
    if (!contains(b.labels, l)) {
      a_only.push_back(l);
    } else {
      (contains(keep, l) ? batch : reduced).push_back(l);
    }
  }
  for (int l : b.labels)
    if (!contains(a.labels, l)) b_only.push_back(l);
  auto concat = [](std::vector<int> x, const std::vector<int>& y, const std::vector<int>& z) {
    x.insert(x.end(), y.begin(), y.end());
    x.insert(x.end(), z.begin(), z.end());
    return x;
  };
  Labeled<C> am = transform(a, concat(batch, a_only, reduced), {}, size);
  Labeled<C> bm = transform(b, concat(batch, reduced, b_only), {}, size);
  auto prod = [&](const std::vector<int>& ls) {
    int64_t p = 1;
    for (int l : ls) p *= size[static_cast<size_t>(l)];
    return p;
  };
  MatMulDims d;
  d.batch = prod(batch);
  d.m = prod(a_only);
  d.k = prod(reduced);
  d.n = prod(b_only);
  for (int64_t i = 0; i < d.batch; ++i) {
    d.a_index.push_back(i);
    d.b_index.push_back(i);
  }
  Labeled<C> r;
  r.labels = concat(batch, a_only, b_only);
  for (int l : r.labels) r.dims.push_back(size[static_cast<size_t>(l)]);
  r.data.assign(static_cast<size_t>(d.batch * d.m * d.n), C(0));
  if (d.k > 0 && !r.data.empty())
    batched_gemm<C>(d, am.data.data(), bm.data.data(), r.data.data(), threads);
  return r;
}

using EinsumTypes = NumericTypes;

class EinsumKernel : public runtime::Kernel {
 public:
  explicit EinsumKernel(const runtime::KernelInit& init)
      : equation_(init.node.attr_string("equation")) {}

  void run(runtime::KernelContext& ctx) const override {
    std::vector<int64_t> ranks;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) ranks.push_back(ctx.input(i).rank());
    std::string error;
    auto spec = ops::parse_einsum(equation_, ranks, error);
    if (!spec) ctx.fail("equation '{}': {}", equation_, error);
    DType dtype = ctx.input(0).dtype();
    std::vector<int64_t> size(ops::EinsumSpec::kEllipsisLabel + 64, 1);
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const ir::Tensor& t = ctx.input(i);
      if (t.dtype() != dtype)
        ctx.fail("input {} has dtype {}, expected {}", i, ir::dtype_name(t.dtype()),
                 ir::dtype_name(dtype));
      for (size_t k = 0; k < spec->inputs[i].size(); ++k) {
        size_t l = static_cast<size_t>(spec->inputs[i][k]);
        if (l >= size.size()) ctx.fail("equation '{}': too many ellipsis dims", equation_);
        int64_t d = t.dim(static_cast<int64_t>(k));
        if (d == 1) continue;
        if (size[l] != 1 && size[l] != d)
          ctx.fail("equation '{}': a label has sizes {} and {}", equation_, size[l], d);
        size[l] = d;
      }
    }
    // A label every operand has as 1 keeps size 1; one that is 0 anywhere is 0 everywhere.
    for (size_t i = 0; i < ctx.num_inputs(); ++i)
      for (size_t k = 0; k < spec->inputs[i].size(); ++k)
        if (ctx.input(i).dim(static_cast<int64_t>(k)) == 0)
          size[static_cast<size_t>(spec->inputs[i][k])] = 0;
    std::vector<int64_t> out_shape;
    for (int l : spec->output) out_shape.push_back(size[static_cast<size_t>(l)]);
    ir::Tensor& y = ctx.allocate_output(0, dtype, out_shape);
    dispatch(EinsumTypes{}, dtype, ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      std::vector<Labeled<C>> ops;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        const ir::Tensor& t = ctx.input(i);
        ops.push_back({spec->inputs[i], t.shape(), to_compute<C>(t.data<T>(), t.numel())});
      }
      // Labels needed after operand i: the output's and those of later operands.
      auto needed_after = [&](size_t i) {
        std::vector<int> keep = spec->output;
        for (size_t j = i + 1; j < ops.size(); ++j)
          keep.insert(keep.end(), ops[j].labels.begin(), ops[j].labels.end());
        return keep;
      };
      // Each operand first drops labels no other operand nor the output uses.
      for (size_t i = 0; i < ops.size(); ++i) {
        std::vector<int> keep = spec->output;
        for (size_t j = 0; j < ops.size(); ++j)
          if (j != i) keep.insert(keep.end(), spec->inputs[j].begin(), spec->inputs[j].end());
        ops[i] = keep_only(ops[i], keep, size);
      }
      Labeled<C> acc = std::move(ops[0]);
      for (size_t i = 1; i < ops.size(); ++i) {
        std::vector<int> keep = needed_after(i);
        std::vector<int> keep_acc = keep;
        keep_acc.insert(keep_acc.end(), ops[i].labels.begin(), ops[i].labels.end());
        acc = keep_only(acc, keep_acc, size);
        acc = contract(acc, ops[i], keep, size, ctx.num_threads());
      }
      std::vector<int> summed;
      for (int l : unique_labels(acc.labels))
        if (!contains(spec->output, l)) summed.push_back(l);
      Labeled<C> result = transform(acc, spec->output, summed, size);
      T* yp = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i)
        yp[i] = convert<T>(result.data[static_cast<size_t>(i)]);
    });
  }

 private:
  std::string equation_;
};

class DetKernel : public runtime::Kernel {
 public:
  explicit DetKernel(const runtime::KernelInit&) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2))
      ctx.fail("input {} is not a batch of square matrices", ir::shape_to_string(x.shape()));
    const int64_t n = x.dim(x.rank() - 1);
    std::vector<int64_t> out_shape(x.shape().begin(), x.shape().end() - 2);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T* xp = x.data<T>();
      T* yp = y.data<T>();
      parallel_for(y.numel(), 16, ctx.num_threads(), [&](int64_t lo, int64_t hi) {
        std::vector<double> a(static_cast<size_t>(n * n));
        for (int64_t b = lo; b < hi; ++b) {
          for (int64_t i = 0; i < n * n; ++i)
            a[static_cast<size_t>(i)] =
                static_cast<double>(static_cast<compute_t<T>>(xp[b * n * n + i]));
          yp[b] = convert<T>(static_cast<compute_t<T>>(lu_determinant(a, n)));
        }
      });
    });
  }

 private:
  static double lu_determinant(std::vector<double>& a, int64_t n) {
    double det = 1.0;
    for (int64_t c = 0; c < n; ++c) {
      int64_t pivot = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (std::fabs(a[static_cast<size_t>(r * n + c)]) >
            std::fabs(a[static_cast<size_t>(pivot * n + c)]))
          pivot = r;
      double p = a[static_cast<size_t>(pivot * n + c)];
      if (p == 0.0) return 0.0;
      if (pivot != c) {
        for (int64_t k = 0; k < n; ++k)
          std::swap(a[static_cast<size_t>(c * n + k)], a[static_cast<size_t>(pivot * n + k)]);
        det = -det;
      }
      det *= p;
      for (int64_t r = c + 1; r < n; ++r) {
        double f = a[static_cast<size_t>(r * n + c)] / p;
        if (f == 0.0) continue;
        for (int64_t k = c; k < n; ++k)
          a[static_cast<size_t>(r * n + k)] -= f * a[static_cast<size_t>(c * n + k)];
      }
    }
    return det;
  }
};

}  // namespace

void register_matmul_einsum_kernels(runtime::KernelRegistry& r) {
  r.add<EinsumKernel>(ops::OpKind::Einsum, dtypes_of(EinsumTypes{}));
  r.add<DetKernel>(ops::OpKind::Det, dtypes_of(FloatTypes{}));
}

}  // namespace switchyard::cpu
