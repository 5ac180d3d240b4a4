// Host-side helpers shared by the CUDA data-movement kernels (data.cc, gather_scatter.cc,
// resize.cc): dtype sets and placement checks, host values, shape arithmetic, strided views and
// the KernelDef shorthand their registrations use.
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/kernels/data_impl.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda::movement {

using ir::DType;
using runtime::KernelContext;
using runtime::KernelDef;
using runtime::KernelInit;
using runtime::Support;

// ---- dtypes and checks -------------------------------------------------------------------

// Every dtype a plain copy serves: numeric and bool.
inline std::vector<DType> plain_dtypes() {
  std::vector<DType> out;
  for (DType d : ops::all_dtypes())
    if (d != DType::String) out.push_back(d);
  return out;
}

inline const std::vector<DType> kFloatDtypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                                DType::Float64};

inline bool is_index_dtype(DType d) { return d == DType::Int32 || d == DType::Int64; }

// Refuses a node whose input `i` has a known rank above what the kernels' by-value parameter
// structs hold.
inline Support rank_fits(const ir::Node& node, size_t i) {
  const ir::Value* v = node.input(i);
  if (v && v->type().has_rank() && v->type().rank() > data::kMaxRank)
    return Support::no(fmt::format("the CUDA {} kernel handles rank up to {}, input {} has rank {}",
                                   node.op_type(), data::kMaxRank, i, v->type().rank()));
  return Support::yes();
}

// Refuses indices (input i) of a dtype other than int32 / int64 when the type says so.
inline Support indices_fit(const ir::Node& node, size_t i) {
  const ir::Value* v = node.input(i);
  if (v && v->type().is_tensor() && v->type().dtype != DType::Undefined &&
      !is_index_dtype(v->type().dtype))
    return Support::no(fmt::format("the CUDA {} kernel takes int32 or int64 indices, got {}",
                                   node.op_type(), ir::dtype_name(v->type().dtype)));
  return Support::yes();
}

inline Support both(const Support& a, const Support& b) { return a.ok ? b : a; }

inline int elem_size(DType d) { return static_cast<int>(ir::dtype_size(d)); }

// ---- host values -------------------------------------------------------------------------

// Input i's integer values (a host input); fails naming the node when not integers.
inline std::vector<int64_t> int_values(const KernelContext& ctx, size_t i, const char* what) {
  DType d = ctx.input(i).dtype();
  if (!ir::dtype_is_integer(d)) ctx.fail("{} must hold integers, got {}", what, ir::dtype_name(d));
  return read_ints(ctx, i);
}

template <typename T>
uint64_t to_bits(T v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

// The bits of v in `dtype`, converted as the CPU's Resize does (integers and bool: round to
// nearest even and saturate, NaN → 0; half types through float).
inline uint64_t bits_from_double(DType dtype, double v) {
  auto integral = [v](auto tag) -> uint64_t {
    using T = decltype(tag);
    if (std::isnan(v)) return to_bits(T(0));
    double r = std::nearbyint(v);
    if (r <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return to_bits(std::numeric_limits<T>::lowest());
    if (r >= static_cast<double>(std::numeric_limits<T>::max()))
      return to_bits(std::numeric_limits<T>::max());
    return to_bits(static_cast<T>(r));
  };
  switch (dtype) {
    case DType::Float32:
      return to_bits(static_cast<float>(v));
    case DType::Float64:
      return to_bits(v);
    case DType::Float16:
      return to_bits(ir::Float16(static_cast<float>(v)));
    case DType::BFloat16:
      return to_bits(ir::BFloat16(static_cast<float>(v)));
    case DType::Int8:
      return integral(int8_t{});
    case DType::Int16:
      return integral(int16_t{});
    case DType::Int32:
      return integral(int32_t{});
    case DType::Int64:
      return integral(int64_t{});
    case DType::UInt8:
      return integral(uint8_t{});
    case DType::UInt16:
      return integral(uint16_t{});
    case DType::UInt32:
      return integral(uint32_t{});
    case DType::UInt64:
      return integral(uint64_t{});
    case DType::Bool:
      return integral(bool{});
    default:
      SY_THROW(Unsupported, "dtype {} has no CUDA data kernel", ir::dtype_name(dtype));
  }
}

// Element 0 of input i (a host input) as the bits of a `target` value: integers keep their
// bits (truncated to the target's size), floats and bool convert through double.
inline uint64_t scalar_bits(const KernelContext& ctx, size_t i, DType target) {
  DType d = ctx.input(i).dtype();
  if (ir::dtype_is_integer(d) && ir::dtype_is_integer(target))
    return static_cast<uint64_t>(read_ints(ctx, i).at(0));
  return bits_from_double(target, read_doubles(ctx, i).at(0));
}

// ---- shapes ------------------------------------------------------------------------------

inline std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

inline int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

template <typename T>
void copy_dims(T* dst, const std::vector<int64_t>& src) {
  for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
}

// Fails naming the node when a rank exceeds what the parameter structs hold.
inline void require_rank(const KernelContext& ctx, size_t rank, const char* what) {
  if (rank > static_cast<size_t>(data::kMaxRank))
    ctx.fail("{} has rank {}; the CUDA kernel handles up to {}", what, rank, data::kMaxRank);
}

// Output `out_shape` reading source strides `strides`, with size-1 dims dropped and neighbours
// the source walks contiguously merged (as the CPU's strided_copy does).
inline data::StridedView merged_view(const KernelContext& ctx,
                                     const std::vector<int64_t>& out_shape,
                                     const std::vector<int64_t>& strides) {
  std::vector<int64_t> shape, st;
  for (size_t i = 0; i < out_shape.size(); ++i) {
    if (out_shape[i] == 1) continue;
    if (!shape.empty() && st.back() == strides[i] * out_shape[i]) {
      shape.back() *= out_shape[i];
      st.back() = strides[i];
      continue;
    }
    shape.push_back(out_shape[i]);
    st.push_back(strides[i]);
  }
  require_rank(ctx, shape.size(), "the copy (after merging dims)");
  data::StridedView view;
  view.rank = static_cast<int>(shape.size());
  copy_dims(view.dims, shape);
  copy_dims(view.strides, st);
  return view;
}

// Output 0 = `in` read at in[offset + sum(i_k * strides_k)] over `out_shape`.
inline void copy_strided_to_output(KernelContext& ctx, const ir::Tensor& in,
                                   std::vector<int64_t> out_shape,
                                   const std::vector<int64_t>& strides, int64_t offset = 0) {
  ir::Tensor& out = ctx.allocate_output(0, in.dtype(), out_shape);
  if (out.numel() == 0) return;
  const int es = elem_size(in.dtype());
  const char* src = static_cast<const char*>(in.raw()) + offset * es;
  SY_CUDA_CHECK(data::launch_strided_copy(src, out.raw(), es, merged_view(ctx, out_shape, strides),
                                          stream_of(ctx)));
}

// Sorted distinct axes normalized to `rank`.
inline std::vector<int64_t> sorted_axes(const KernelContext& ctx, std::vector<int64_t> axes,
                                        int64_t rank) {
  for (int64_t& a : axes) a = ops::normalize_axis(ctx.node(), a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    ctx.fail("axes contain a duplicate");
  return axes;
}

// ---- registration ------------------------------------------------------------------------

template <typename K>
KernelDef def(ops::OpKind op, std::vector<DType> dtypes, std::vector<int> host_inputs = {},
              std::function<Support(const ir::Node&)> check = {}, int dtype_input = 0) {
  return KernelDef{op,
                   std::move(dtypes),
                   dtype_input,
                   std::move(check),
                   runtime::make_factory<K>(),
                   std::move(host_inputs)};
}

inline Support check_rank0(const ir::Node& n) { return rank_fits(n, 0); }
inline Support check_gather(const ir::Node& n) { return indices_fit(n, 1); }
inline Support check_gather_ranked(const ir::Node& n) {
  return both(rank_fits(n, 0), indices_fit(n, 1));
}

}  // namespace switchyard::cuda::movement
