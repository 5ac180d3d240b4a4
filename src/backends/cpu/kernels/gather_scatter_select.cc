// CPU kernels of the gather_scatter family whose output size depends on data or order: NonZero,
// Compress, TopK, Unique.
#include <cmath>
#include <numeric>

#include "backends/cpu/kernels/shape_internal.h"

namespace switchyard::cpu {

namespace {

using runtime::KernelContext;
using runtime::KernelInit;

// Calls f(T{}) for every dtype, strings included.
template <typename F>
void dispatch_all(DType dtype, const ir::Node& node, F&& f) {
  if (dtype == DType::String)
    f(std::string{});
  else
    dispatch(AllPodTypes{}, dtype, node, f);
}

template <typename T>
bool is_nonzero(const T& v) {
  if constexpr (std::is_same_v<T, std::string>)
    return !v.empty();
  else if constexpr (std::is_same_v<T, bool>)
    return v;
  else
    return static_cast<compute_t<T>>(v) != compute_t<T>(0);
}

// A total order on values: NaN sorts after every number and equals NaN.
template <typename T>
struct ValueOrder {
  using C = std::conditional_t<std::is_same_v<T, std::string>, std::string, compute_t<T>>;
  static C key(const T& v) {
    if constexpr (std::is_same_v<T, std::string>)
      return v;
    else
      return static_cast<C>(v);
  }
  static bool nan(const C& v) {
    if constexpr (std::is_floating_point_v<C>)
      return std::isnan(v);
    else
      return false;
  }
  static bool less(const C& a, const C& b) {
    if (nan(a)) return false;
    if (nan(b)) return true;
    return a < b;
  }
  static bool equal(const C& a, const C& b) {
    if (nan(a) || nan(b)) return nan(a) && nan(b);
    return a == b;
  }
};

class NonZeroKernel : public runtime::Kernel {
 public:
  explicit NonZeroKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    dispatch_all(in.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = in.data<T>();
      int64_t count = 0;
      for (int64_t i = 0; i < in.numel(); ++i) count += is_nonzero(p[i]) ? 1 : 0;
      int64_t rank = in.rank();
      ir::Tensor& out = ctx.allocate_output(0, DType::Int64, {rank, count});
      int64_t* o = out.data<int64_t>();
      std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
      int64_t n = 0;
      for (int64_t i = 0; i < in.numel(); ++i) {
        if (is_nonzero(p[i])) {
          for (int64_t k = 0; k < rank; ++k) o[k * count + n] = idx[static_cast<size_t>(k)];
          ++n;
        }
        for (int64_t k = rank - 1; k >= 0; --k) {
          if (++idx[static_cast<size_t>(k)] < in.dim(k)) break;
          idx[static_cast<size_t>(k)] = 0;
        }
      }
    });
  }
};

// An input viewed as [outer, dim, inner] around an axis; without one, flat as [1, numel, 1].
struct AxisView {
  int64_t outer = 1, dim = 0, inner = 1;
  size_t axis = 0;
};

// The view of `in` around the node's optional axis attribute (axis_attr when has_axis).
AxisView view_around_axis(const KernelContext& ctx, const ir::Tensor& in, bool has_axis,
                          int64_t axis_attr) {
  AxisView v;
  v.dim = in.numel();
  if (has_axis) {
    if (in.rank() == 0) ctx.fail("input must have rank >= 1 when axis is given");
    v.axis = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_attr, in.rank()));
    v.dim = in.shape()[v.axis];
    for (size_t k = 0; k < v.axis; ++k) v.outer *= in.shape()[k];
    for (size_t k = v.axis + 1; k < in.shape().size(); ++k) v.inner *= in.shape()[k];
  }
  return v;
}

class CompressKernel : public runtime::Kernel {
 public:
  explicit CompressKernel(const KernelInit& init) : has_axis_(init.node.has_attribute("axis")) {
    if (has_axis_) axis_ = init.node.attr_int("axis");
  }
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    const ir::Tensor& cond = ctx.input(1);
    if (cond.dtype() != DType::Bool) ctx.fail("condition must be bool");
    if (cond.rank() != 1)
      ctx.fail("condition must be 1-D, got {}", ir::shape_to_string(cond.shape()));
    const AxisView view = view_around_axis(ctx, in, has_axis_, axis_);
    const int64_t outer = view.outer, dim = view.dim, inner = view.inner;
    const size_t axis = view.axis;
    std::vector<int64_t> selected;
    const bool* c = cond.data<bool>();
    for (int64_t i = 0; i < cond.numel(); ++i) {
      if (!c[i]) continue;
      if (i >= dim) ctx.fail("condition selects index {} beyond the axis size {}", i, dim);
      selected.push_back(i);
    }
    int64_t count = static_cast<int64_t>(selected.size());
    std::vector<int64_t> shape{count};
    if (has_axis_) {
      shape = in.shape();
      shape[axis] = count;
    }
    ir::Tensor& out = ctx.allocate_output(0, in.dtype(), shape);
    if (out.numel() == 0) return;
    dispatch_by_size(in.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      parallel_for(outer * count, std::max<int64_t>(1, 8192 / inner), ctx.num_threads(),
                   [&](int64_t b, int64_t e) {
                     for (int64_t job = b; job < e; ++job) {
                       int64_t o = job / count, s = selected[static_cast<size_t>(job % count)];
                       copy_elements(src + (o * dim + s) * inner, dst + job * inner, inner);
                     }
                   });
    });
  }

 private:
  bool has_axis_;
  int64_t axis_ = 0;
};

class TopKKernel : public runtime::Kernel {
 public:
  explicit TopKKernel(const KernelInit& init)
      : axis_(init.node.attr_int("axis", -1)), largest_(init.node.attr_int("largest", 1) != 0) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    if (in.rank() == 0) ctx.fail("input must have rank >= 1");
    size_t axis = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, in.rank()));
    std::vector<int64_t> kv = int_values(ctx, 1, "K");
    if (kv.size() != 1) ctx.fail("K must hold one value, got {}", kv.size());
    int64_t k = kv[0], dim = in.shape()[axis];
    if (k < 0 || k > dim) ctx.fail("K = {} is outside [0, {}] for axis {}", k, dim, axis);
    std::vector<int64_t> shape = in.shape();
    shape[axis] = k;
    ir::Tensor& values = ctx.allocate_output(0, in.dtype(), shape);
    ir::Tensor& indices = ctx.allocate_output(1, DType::Int64, shape);
    if (values.numel() == 0) return;
    int64_t outer = 1, inner = 1;
    for (size_t a = 0; a < axis; ++a) outer *= in.shape()[a];
    for (size_t a = axis + 1; a < shape.size(); ++a) inner *= in.shape()[a];
    dispatch(NumericTypes{}, in.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using O = ValueOrder<T>;
      using C = typename O::C;
      const T* src = in.data<T>();
      T* vout = values.data<T>();
      int64_t* iout = indices.data<int64_t>();
      bool largest = largest_;
      // Ties keep the lower index first, as ONNX specifies.
      auto before = [largest](const std::pair<C, int64_t>& a, const std::pair<C, int64_t>& b) {
        if (largest ? O::less(b.first, a.first) : O::less(a.first, b.first)) return true;
        if (O::equal(a.first, b.first)) return a.second < b.second;
        return false;
      };
      parallel_for(outer * inner, std::max<int64_t>(1, 4096 / dim), ctx.num_threads(),
                   [&](int64_t b, int64_t e) {
                     std::vector<std::pair<C, int64_t>> items(static_cast<size_t>(dim));
                     for (int64_t job = b; job < e; ++job) {
                       int64_t o = job / inner, i = job % inner;
                       const T* s = src + o * dim * inner + i;
                       for (int64_t j = 0; j < dim; ++j)
                         items[static_cast<size_t>(j)] = {O::key(s[j * inner]), j};
                       std::partial_sort(items.begin(), items.begin() + k, items.end(), before);
                       T* vo = vout + o * k * inner + i;
                       int64_t* io = iout + o * k * inner + i;
                       for (int64_t j = 0; j < k; ++j) {
                         int64_t from = items[static_cast<size_t>(j)].second;
                         vo[j * inner] = s[from * inner];
                         io[j * inner] = from;
                       }
                     }
                   });
    });
  }

 private:
  int64_t axis_;
  bool largest_;
};

class UniqueKernel : public runtime::Kernel {
 public:
  explicit UniqueKernel(const KernelInit& init)
      : has_axis_(init.node.has_attribute("axis")), sorted_(init.node.attr_int("sorted", 1) != 0) {
    if (has_axis_) axis_ = init.node.attr_int("axis");
  }
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    const AxisView view = view_around_axis(ctx, in, has_axis_, axis_);
    const int64_t outer = view.outer, dim = view.dim, inner = view.inner;
    const size_t axis = view.axis;
    dispatch_all(in.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using O = ValueOrder<T>;
      const T* src = in.data<T>();
      // Slice s is the elements src[(o * dim + s) * inner + i] in (o, i) order.
      auto compare = [&](int64_t a, int64_t b) {  // -1, 0, 1
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t i = 0; i < inner; ++i) {
            auto x = O::key(src[(o * dim + a) * inner + i]);
            auto y = O::key(src[(o * dim + b) * inner + i]);
            if (O::less(x, y)) return -1;
            if (O::less(y, x)) return 1;
          }
        }
        return 0;
      };
      std::vector<int64_t> order(static_cast<size_t>(dim));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
      // Groups of equal slices: first occurrence (stable sort keeps it first) and members.
      std::vector<int64_t> first, counts, group_of(static_cast<size_t>(dim));
      for (size_t j = 0; j < order.size(); ++j) {
        if (j == 0 || compare(order[j - 1], order[j]) != 0) {
          first.push_back(order[j]);
          counts.push_back(0);
        }
        ++counts.back();
        group_of[static_cast<size_t>(order[j])] = static_cast<int64_t>(first.size()) - 1;
      }
      size_t groups = first.size();
      std::vector<int64_t> rank_of(groups);  // output position of each group
      std::iota(rank_of.begin(), rank_of.end(), 0);
      if (!sorted_) {
        std::vector<int64_t> by_first(groups);
        std::iota(by_first.begin(), by_first.end(), 0);
        std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) {
          return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)];
        });
        for (size_t p = 0; p < groups; ++p)
          rank_of[static_cast<size_t>(by_first[p])] = static_cast<int64_t>(p);
      }
      int64_t n = static_cast<int64_t>(groups);
      std::vector<int64_t> y_shape{n};
      if (has_axis_) {
        y_shape = in.shape();
        y_shape[axis] = n;
      }
      ir::Tensor& y = ctx.allocate_output(0, in.dtype(), y_shape);
      T* yd = y.data<T>();
      for (size_t g = 0; g < groups; ++g) {
        int64_t pos = rank_of[g], s = first[g];
        for (int64_t o = 0; o < outer; ++o)
          copy_elements(src + (o * dim + s) * inner, yd + (o * n + pos) * inner, inner);
      }
      if (ctx.num_outputs() > 1) {
        int64_t* p = ctx.allocate_output(1, DType::Int64, {n}).data<int64_t>();
        for (size_t g = 0; g < groups; ++g) p[rank_of[g]] = first[g];
      }
      if (ctx.num_outputs() > 2) {
        int64_t* p = ctx.allocate_output(2, DType::Int64, {dim}).data<int64_t>();
        for (int64_t j = 0; j < dim; ++j)
          p[j] = rank_of[static_cast<size_t>(group_of[static_cast<size_t>(j)])];
      }
      if (ctx.num_outputs() > 3) {
        int64_t* p = ctx.allocate_output(3, DType::Int64, {n}).data<int64_t>();
        for (size_t g = 0; g < groups; ++g) p[rank_of[g]] = counts[g];
      }
    });
  }

 private:
  bool has_axis_;
  bool sorted_;
  int64_t axis_ = 0;
};

}  // namespace

void register_gather_scatter_select_kernels(runtime::KernelRegistry& r) {
  r.add<NonZeroKernel>(ops::OpKind::NonZero, movable_dtypes());
  r.add<CompressKernel>(ops::OpKind::Compress, movable_dtypes());
  r.add<TopKKernel>(ops::OpKind::TopK, dtypes_of(NumericTypes{}));
  r.add<UniqueKernel>(ops::OpKind::Unique, movable_dtypes());
}

}  // namespace switchyard::cpu
