// CPU kernels of the gather_scatter family: Gather, GatherElements, GatherND, ScatterElements,
// ScatterND, OneHot. NonZero, Compress, TopK and Unique live in gather_scatter_select.cc.
// Every index read from tensor data is checked before any parallel loop starts.
#include <limits>

#include "backends/cpu/kernels/shape_internal.h"
#include "ops/gather_geometry.h"

namespace switchyard::cpu {

namespace {

using runtime::KernelContext;
using runtime::KernelInit;

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

class GatherKernel : public runtime::Kernel {
 public:
  explicit GatherKernel(const KernelInit& init) : axis_(init.node.attr_int("axis", 0)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    if (data.rank() == 0) ctx.fail("data must have rank >= 1");
    size_t a = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, data.rank()));
    const ir::Tensor& indices = ctx.input(1);
    int64_t dim = data.shape()[a];
    std::vector<int64_t> idx = index_values(ctx, 1, static_cast<int64_t>(a), dim);
    std::vector<int64_t> shape(data.shape().begin(), data.shape().begin() + a);
    shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
    shape.insert(shape.end(), data.shape().begin() + a + 1, data.shape().end());
    ir::Tensor& out = ctx.allocate_output(0, data.dtype(), shape);
    if (out.numel() == 0) return;
    int64_t outer = product(data.shape(), 0, a);
    int64_t inner = product(data.shape(), a + 1, data.shape().size());
    int64_t n = static_cast<int64_t>(idx.size());
    dispatch_by_size(data.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T* src = data.data<T>();
      T* dst = out.data<T>();
      parallel_for(outer * n, std::max<int64_t>(1, 8192 / inner), ctx.num_threads(),
                   [&](int64_t b, int64_t e) {
                     for (int64_t job = b; job < e; ++job) {
                       int64_t o = job / n, i = job % n;
                       const T* s = src + (o * dim + idx[static_cast<size_t>(i)]) * inner;
                       if (inner == 1)
                         dst[job] = *s;
                       else
                         copy_elements(s, dst + job * inner, inner);
                     }
                   });
    });
  }

 private:
  int64_t axis_;
};

// Calls fn(position, data_offset) for positions [row_begin * inner, row_end * inner) of an
// index tensor of `shape`, where data_offset addresses data at the same coordinates with the
// coordinate on `axis` left out (to be added from the index value).
template <typename F>
void walk_element_rows(const std::vector<int64_t>& shape, const std::vector<int64_t>& data_strides,
                       size_t axis, int64_t row_begin, int64_t row_end, F&& fn) {
  size_t rank = shape.size();
  std::vector<int64_t> st = data_strides;
  st[axis] = 0;
  int64_t inner = shape[rank - 1];
  RowWalk rows(shape, st, row_begin);
  for (int64_t row = row_begin; row < row_end; ++row, rows.next())
    for (int64_t j = 0; j < inner; ++j) fn(row * inner + j, rows.offset() + j * st[rank - 1]);
}

class GatherElementsKernel : public runtime::Kernel {
 public:
  explicit GatherElementsKernel(const KernelInit& init) : axis_(init.node.attr_int("axis", 0)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    if (data.rank() == 0) ctx.fail("data must have rank >= 1");
    size_t a = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, data.rank()));
    const std::vector<int64_t>& shape = ctx.input(1).shape();
    ops::check_element_indices_shape(ctx.node(), data.shape(), shape, a);
    std::vector<int64_t> idx = index_values(ctx, 1, static_cast<int64_t>(a), data.shape()[a]);
    ir::Tensor& out = ctx.allocate_output(0, data.dtype(), shape);
    if (out.numel() == 0) return;
    std::vector<int64_t> ds = strides_of(data.shape());
    int64_t rows = out.numel() / shape.back();
    dispatch_by_size(data.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T* src = data.data<T>();
      T* dst = out.data<T>();
      parallel_for(rows, std::max<int64_t>(1, 8192 / shape.back()), ctx.num_threads(),
                   [&](int64_t b, int64_t e) {
                     walk_element_rows(shape, ds, a, b, e, [&](int64_t pos, int64_t off) {
                       dst[pos] = src[off + idx[static_cast<size_t>(pos)] * ds[a]];
                     });
                   });
    });
  }

 private:
  int64_t axis_;
};

class GatherNDKernel : public runtime::Kernel {
 public:
  explicit GatherNDKernel(const KernelInit& init)
      : batch_dims_(init.node.attr_int("batch_dims", 0)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    const ir::Tensor& indices = ctx.input(1);
    std::vector<int64_t> shape =
        ops::gather_nd_shape(ctx.node(), data.shape(), indices.shape(), batch_dims_);
    const int64_t b = batch_dims_, m = indices.shape().back();
    std::vector<int64_t> raw = int_values(ctx, 1, "indices");
    ir::Tensor& out = ctx.allocate_output(0, data.dtype(), shape);
    size_t ub = static_cast<size_t>(b), um = static_cast<size_t>(m);
    int64_t batch = product(data.shape(), 0, ub);
    int64_t slice = product(data.shape(), ub + um, data.shape().size());
    int64_t batch_stride = product(data.shape(), ub, data.shape().size());
    int64_t tuples = batch == 0 ? 0 : static_cast<int64_t>(raw.size()) / m / batch;
    std::vector<int64_t> ds = strides_of(data.shape());
    // Resolve every tuple to a data offset first (checks the indices).
    std::vector<int64_t> offsets(static_cast<size_t>(batch * tuples));
    for (int64_t t = 0; t < batch * tuples; ++t) {
      int64_t off = (t / std::max<int64_t>(tuples, 1)) * batch_stride;
      for (size_t j = 0; j < um; ++j) {
        int64_t dim = data.shape()[ub + j];
        int64_t v = raw[static_cast<size_t>(t) * um + j];
        if (v < -dim || v >= dim)
          ctx.fail("index {} is out of range for axis {} of size {}", v, ub + j, dim);
        off += (v < 0 ? v + dim : v) * ds[ub + j];
      }
      offsets[static_cast<size_t>(t)] = off;
    }
    if (out.numel() == 0) return;
    dispatch_by_size(data.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T* src = data.data<T>();
      T* dst = out.data<T>();
      parallel_for(batch * tuples, std::max<int64_t>(1, 8192 / slice), ctx.num_threads(),
                   [&](int64_t b0, int64_t e0) {
                     for (int64_t t = b0; t < e0; ++t)
                       copy_elements(src + offsets[static_cast<size_t>(t)], dst + t * slice, slice);
                   });
    });
  }

 private:
  int64_t batch_dims_;
};

enum class Reduction { None, Add, Mul, Max, Min };

Reduction parse_reduction(const ir::Node& node) {
  std::string r = node.attr_string("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  SY_THROW(InvalidModel, "{}: reduction '{}' is not one of none, add, mul, max, min",
           node.describe(), r);
}

// Reductions need arithmetic: numeric dtypes only; plain scatter moves any dtype.
runtime::Support check_scatter(const ir::Node& node) {
  std::string r = node.attr_string("reduction", "none");
  const ir::Value* v = node.input(0);
  ir::DType dt = v ? v->type().dtype : DType::Undefined;
  if (r != "none" && (dt == DType::Bool || dt == DType::String))
    return runtime::Support::no(fmt::format("no {} kernel with reduction '{}' for {} on cpu",
                                            node.op_type(), r, ir::dtype_name(dt)));
  return runtime::Support::yes();
}

template <typename T>
inline void reduce_into(T& dst, const T& v, Reduction r) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
    dst = v;
  } else {
    C a = static_cast<C>(dst), b = static_cast<C>(v);
    switch (r) {
      case Reduction::None:
        dst = v;
        return;
      case Reduction::Add:
        dst = convert<T>(static_cast<C>(a + b));
        return;
      case Reduction::Mul:
        dst = convert<T>(static_cast<C>(a * b));
        return;
      case Reduction::Max:
        dst = convert<T>(std::max(a, b));
        return;
      case Reduction::Min:
        dst = convert<T>(std::min(a, b));
        return;
    }
  }
}

// Calls f(T{}) with the storage type: by element size for plain scatter, by dtype otherwise.
template <typename F>
void dispatch_scatter(Reduction r, DType dtype, const ir::Node& node, F&& f) {
  if (r == Reduction::None)
    dispatch_by_size(dtype, node, f);
  else
    dispatch(NumericTypes{}, dtype, node, f);
}

class ScatterElementsKernel : public runtime::Kernel {
 public:
  explicit ScatterElementsKernel(const KernelInit& init)
      : axis_(init.node.attr_int("axis", 0)), reduction_(parse_reduction(init.node)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    const ir::Tensor& updates = ctx.input(2);
    const std::vector<int64_t>& shape = ctx.input(1).shape();
    const size_t a = ops::check_scatter_elements(ctx.node(), data, shape, updates, axis_);
    std::vector<int64_t> idx = index_values(ctx, 1, static_cast<int64_t>(a), data.shape()[a]);
    ir::Tensor& out = ctx.allocate_output(0, data.dtype(), data.shape());
    std::vector<int64_t> ds = strides_of(data.shape());
    int64_t numel = updates.numel();
    dispatch_scatter(reduction_, data.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      copy_elements(data.data<T>(), out.data<T>(), data.numel());
      if (numel == 0) return;
      const T* upd = updates.data<T>();
      T* dst = out.data<T>();
      // Positions sharing the coordinates before `axis` write disjoint outputs: parallel over
      // those, in order within each (duplicate indices apply in row-major order).
      int64_t inner = shape.back();
      int64_t rows = numel / inner;
      int64_t outer = product(shape, 0, a);
      int64_t rows_per_outer = a + 1 == shape.size() ? 1 : rows / std::max<int64_t>(outer, 1);
      if (a + 1 == shape.size()) outer = rows;
      parallel_for(outer, 16, ctx.num_threads(), [&](int64_t b, int64_t e) {
        walk_element_rows(shape, ds, a, b * rows_per_outer, e * rows_per_outer,
                          [&](int64_t pos, int64_t off) {
                            size_t p = static_cast<size_t>(pos);
                            reduce_into(dst[off + idx[p] * ds[a]], upd[pos], reduction_);
                          });
      });
    });
  }

 private:
  int64_t axis_;
  Reduction reduction_;
};

class ScatterNDKernel : public runtime::Kernel {
 public:
  explicit ScatterNDKernel(const KernelInit& init) : reduction_(parse_reduction(init.node)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    const ir::Tensor& indices = ctx.input(1);
    const ir::Tensor& updates = ctx.input(2);
    const int64_t k = ops::check_scatter_nd(ctx.node(), data, indices.shape(), updates);
    std::vector<int64_t> raw = int_values(ctx, 1, "indices");
    size_t uk = static_cast<size_t>(k);
    int64_t slice = product(data.shape(), uk, data.shape().size());
    int64_t tuples = k == 0 ? product(indices.shape(), 0, indices.shape().size() - 1)
                            : static_cast<int64_t>(raw.size()) / k;
    std::vector<int64_t> ds = strides_of(data.shape());
    std::vector<int64_t> offsets(static_cast<size_t>(tuples));
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (size_t j = 0; j < uk; ++j) {
        int64_t dim = data.shape()[j];
        int64_t v = raw[static_cast<size_t>(t) * uk + j];
        if (v < -dim || v >= dim)
          ctx.fail("index {} is out of range for axis {} of size {}", v, j, dim);
        off += (v < 0 ? v + dim : v) * ds[j];
      }
      offsets[static_cast<size_t>(t)] = off;
    }
    ir::Tensor& out = ctx.allocate_output(0, data.dtype(), data.shape());
    dispatch_scatter(reduction_, data.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      copy_elements(data.data<T>(), out.data<T>(), data.numel());
      const T* upd = updates.data<T>();
      T* dst = out.data<T>();
      for (int64_t t = 0; t < tuples; ++t) {
        T* d = dst + offsets[static_cast<size_t>(t)];
        const T* u = upd + t * slice;
        if (reduction_ == Reduction::None) {
          copy_elements(u, d, slice);
        } else {
          for (int64_t j = 0; j < slice; ++j) reduce_into(d[j], u[j], reduction_);
        }
      }
    });
  }

 private:
  Reduction reduction_;
};

class OneHotKernel : public runtime::Kernel {
 public:
  explicit OneHotKernel(const KernelInit& init) : axis_(init.node.attr_int("axis", -1)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& indices = ctx.input(0);
    const ir::Tensor& depth_t = ctx.input(1);
    const ir::Tensor& values = ctx.input(2);
    if (depth_t.numel() != 1) ctx.fail("depth must hold one value, got {}", depth_t.numel());
    if (values.numel() != 2) ctx.fail("values must hold 2 elements, got {}", values.numel());
    double depth_v = depth_t.scalar_as_double();
    if (!(depth_v >= 1 && depth_v < 9.0e18)) ctx.fail("depth must be positive, got {}", depth_v);
    int64_t depth = static_cast<int64_t>(depth_v);
    int64_t rank = indices.rank() + 1;
    if (axis_ < -rank || axis_ >= rank)
      ctx.fail("axis {} is out of range for rank {}", axis_, rank);
    size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    std::vector<int64_t> shape = indices.shape();
    shape.insert(shape.begin() + static_cast<int64_t>(axis), depth);
    std::vector<int64_t> idx(static_cast<size_t>(indices.numel()));
    dispatch(NumericTypes{}, indices.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = indices.data<T>();
      for (size_t i = 0; i < idx.size(); ++i) {
        double v = static_cast<double>(convert<compute_t<T>>(p[i]));
        // Out of [-depth, depth) gives an all-off row, as the spec says.
        idx[i] = v >= -depth_v && v < depth_v ? static_cast<int64_t>(v) : depth;
        if (idx[i] < 0) idx[i] += depth;
      }
    });
    ir::Tensor& out = ctx.allocate_output(0, values.dtype(), shape);
    if (out.numel() == 0) return;
    int64_t outer = product(indices.shape(), 0, axis);
    int64_t inner = product(indices.shape(), axis, indices.shape().size());
    dispatch_by_size(values.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T off = values.data<T>()[0];
      const T on = values.data<T>()[1];
      T* dst = out.data<T>();
      parallel_for(outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(depth * inner, 1)),
                   ctx.num_threads(), [&](int64_t b, int64_t e) {
                     for (int64_t o = b; o < e; ++o) {
                       T* d = dst + o * depth * inner;
                       std::fill(d, d + depth * inner, off);
                       for (int64_t i = 0; i < inner; ++i) {
                         int64_t v = idx[static_cast<size_t>(o * inner + i)];
                         if (v < depth) d[v * inner + i] = on;
                       }
                     }
                   });
    });
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_gather_scatter_kernels(runtime::KernelRegistry& r) {
  r.add<GatherKernel>(ops::OpKind::Gather, movable_dtypes());
  r.add<GatherElementsKernel>(ops::OpKind::GatherElements, movable_dtypes());
  r.add<GatherNDKernel>(ops::OpKind::GatherND, movable_dtypes());
  r.add(runtime::KernelDef{ops::OpKind::ScatterElements, movable_dtypes(), 0, check_scatter,
                           runtime::make_factory<ScatterElementsKernel>()});
  r.add(runtime::KernelDef{ops::OpKind::ScatterND, movable_dtypes(), 0, check_scatter,
                           runtime::make_factory<ScatterNDKernel>()});
  r.add<OneHotKernel>(ops::OpKind::OneHot, movable_dtypes(), 2);
  register_gather_scatter_select_kernels(r);
}

}  // namespace switchyard::cpu
