// Helpers of the shape and gather_scatter CPU kernels: strided and per-axis-mapped copies (with
// dispatch_by_size from common.h: data movement does not care what the bytes mean), integer
// inputs.
// Internal to src/backends/cpu/kernels.
#pragma once

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

// Registration of the family files split off shape.cc and gather_scatter.cc.
void register_shape_layout_kernels(runtime::KernelRegistry& r);
void register_shape_pad_kernels(runtime::KernelRegistry& r);
void register_gather_scatter_select_kernels(runtime::KernelRegistry& r);

/// Every dtype a data-movement kernel handles: numeric, bool and string.
inline std::vector<DType> movable_dtypes() { return ops::all_dtypes(); }

/// Copies n elements (memcpy for plain bytes, assignment for strings).
template <typename T>
inline void copy_elements(const T* src, T* dst, int64_t n) {
  if (n <= 0) return;
  if constexpr (std::is_trivially_copyable_v<T>)
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
  else
    std::copy(src, src + n, dst);
}

/// Input i's integer values (any integer dtype); fails naming the node otherwise.
inline std::vector<int64_t> int_values(const runtime::KernelContext& ctx, size_t i,
                                       const char* what) {
  const ir::Tensor& t = ctx.input(i);
  if (t.dtype() == DType::Int64) return {t.data<int64_t>(), t.data<int64_t>() + t.numel()};
  if (t.dtype() == DType::Int32) return {t.data<int32_t>(), t.data<int32_t>() + t.numel()};
  if (!ir::dtype_is_integer(t.dtype()))
    ctx.fail("{} must hold integers, got {}", what, ir::dtype_name(t.dtype()));
  return t.to_int_vector();
}

/// Input i's integer values as indices into axis `axis` of size `dim`: negative values count
/// from the end; a value outside [-dim, dim) fails naming the node.
inline std::vector<int64_t> index_values(const runtime::KernelContext& ctx, size_t i, int64_t axis,
                                         int64_t dim) {
  std::vector<int64_t> v = int_values(ctx, i, "indices");
  for (int64_t& x : v) {
    if (x < -dim || x >= dim)
      ctx.fail("index {} is out of range for axis {} of size {}", x, axis, dim);
    if (x < 0) x += dim;
  }
  return v;
}

/// Fills `dst` (contiguous, shape `out_shape`) with src[offset + sum(index[k] * strides[k])].
/// Strides may be zero (broadcast) or negative. Dims are merged where the source is contiguous
/// across them; a batched 2-D transpose gets a cache-blocked loop.
template <typename T>
void strided_copy(const T* src, T* dst, std::vector<int64_t> out_shape,
                  std::vector<int64_t> strides, int threads) {
  int64_t numel = 1;
  for (int64_t d : out_shape) numel *= d;
  if (numel == 0) return;
  // Drop size-1 dims, then merge neighbours the source walks contiguously.
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
  if (shape.empty()) {
    dst[0] = src[0];
    return;
  }
  const size_t rank = shape.size();
  const int64_t inner = shape.back();
  const int64_t inner_stride = st.back();
  if (rank >= 2 && st[rank - 2] == 1 && inner_stride != 1) {
    // Batched transpose: rows of the output are columns of the source.
    constexpr int64_t kBlock = 32;
    const int64_t rows = shape[rank - 2];
    const int64_t row_blocks = (rows + kBlock - 1) / kBlock;
    const int64_t batches = numel / (rows * inner);
    parallel_for(batches * row_blocks, 4, threads, [&](int64_t b, int64_t e) {
      for (int64_t job = b; job < e; ++job) {
        int64_t batch = job / row_blocks;
        int64_t r0 = (job % row_blocks) * kBlock;
        int64_t r1 = std::min(rows, r0 + kBlock);
        int64_t off = 0, rem = batch;
        for (int64_t k = static_cast<int64_t>(rank) - 3; k >= 0; --k) {
          off += (rem % shape[static_cast<size_t>(k)]) * st[static_cast<size_t>(k)];
          rem /= shape[static_cast<size_t>(k)];
        }
        const T* s = src + off;
        T* d = dst + batch * rows * inner;
        for (int64_t c0 = 0; c0 < inner; c0 += kBlock) {
          int64_t c1 = std::min(inner, c0 + kBlock);
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = c0; c < c1; ++c) d[r * inner + c] = s[r + c * inner_stride];
        }
      }
    });
    return;
  }
  const int64_t outer = numel / inner;
  parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), threads,
               [&](int64_t b, int64_t e) {
                 RowWalk rows(shape, st, b);
                 for (int64_t row = b; row < e; ++row, rows.next()) {
                   T* d = dst + row * inner;
                   const T* s = src + rows.offset();
                   if (inner_stride == 1) {
                     copy_elements(s, d, inner);
                   } else {
                     for (int64_t j = 0; j < inner; ++j) d[j] = s[j * inner_stride];
                   }
                 }
               });
}

/// Fills `dst` (shape `out_shape`) where each output coordinate along axis a reads source
/// coordinate maps[a][j], or `fill` when that entry is -1. Covers Slice, Tile, Pad, Expand.
template <typename T>
void axis_map_copy(const T* src, T* dst, const std::vector<int64_t>& in_shape,
                   const std::vector<int64_t>& out_shape,
                   const std::vector<std::vector<int64_t>>& maps, const T& fill, int threads) {
  int64_t numel = 1;
  for (int64_t d : out_shape) numel *= d;
  if (numel == 0) return;
  const size_t rank = out_shape.size();
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  std::vector<int64_t> in_strides = strides_of(in_shape);
  std::vector<std::vector<int64_t>> offs(rank);
  for (size_t a = 0; a < rank; ++a) {
    offs[a].resize(maps[a].size());
    for (size_t j = 0; j < maps[a].size(); ++j)
      offs[a][j] = maps[a][j] < 0 ? -1 : maps[a][j] * in_strides[a];
  }
  // Runs of the last axis: a source run (contiguous reads) or a fill run.
  struct Run {
    int64_t begin, length, src;  // src -1: fill
  };
  std::vector<Run> runs;
  const std::vector<int64_t>& last = maps[rank - 1];
  for (int64_t j = 0; j < static_cast<int64_t>(last.size()); ++j) {
    int64_t m = last[static_cast<size_t>(j)];
    if (!runs.empty()) {
      Run& r = runs.back();
      bool extends = m < 0 ? r.src < 0 : (r.src >= 0 && r.src + r.length == m);
      if (extends) {
        ++r.length;
        continue;
      }
    }
    runs.push_back({j, 1, m});
  }
  const int64_t inner = out_shape[rank - 1];
  const int64_t outer = numel / inner;
  parallel_for(outer, std::max<int64_t>(1, 16384 / inner), threads, [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(rank - 1, 0);
    int64_t rem = b;
    for (int64_t k = static_cast<int64_t>(rank) - 2; k >= 0; --k) {
      idx[static_cast<size_t>(k)] = rem % out_shape[static_cast<size_t>(k)];
      rem /= out_shape[static_cast<size_t>(k)];
    }
    for (int64_t row = b; row < e; ++row) {
      T* d = dst + row * inner;
      int64_t base = 0;
      bool filled = false;
      for (size_t k = 0; k + 1 < rank; ++k) {
        int64_t o = offs[k][static_cast<size_t>(idx[k])];
        if (o < 0) {
          filled = true;
          break;
        }
        base += o;
      }
      if (filled) {
        std::fill(d, d + inner, fill);
      } else {
        for (const Run& r : runs) {
          if (r.src < 0)
            std::fill(d + r.begin, d + r.begin + r.length, fill);
          else
            copy_elements(src + base + r.src, d + r.begin, r.length);
        }
      }
      for (int64_t k = static_cast<int64_t>(rank) - 2; k >= 0; --k) {
        size_t ku = static_cast<size_t>(k);
        if (++idx[ku] < out_shape[ku]) break;
        idx[ku] = 0;
      }
    }
  });
}

}  // namespace switchyard::cpu
