// Launch API of the CUDA data-movement kernels (data.cu), called from data.cc: fills, strided
// copies (Transpose, Slice, Split, DepthToSpace, SpaceToDepth), Concat, Pad/Tile, Range,
// Trilu, EyeLike, the gather/scatter family, OneHot and Resize. Pure movement works by element
// size (1, 2, 4 or 8 bytes); arithmetic (Range, scatter reductions, Resize interpolation)
// dispatches on the dtype. Every launcher enqueues on `stream`, returns cudaGetLastError() and
// launches nothing for zero elements. Parameters travel by value in the structs below.
// Plain C++ (g++ and nvcc).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "switchyard/dtype.hpp"

namespace switchyard::cuda::data {

constexpr int kMaxRank = 8;

/// An output shape and, per dim, the source stride in elements (negative: reversed; 0: repeat).
struct StridedView {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

/// Sets n elements of `elem_size` bytes to the low bytes of `bits`.
cudaError_t launch_fill(void* dst, int64_t n, int elem_size, uint64_t bits, cudaStream_t stream);

/// dst[0, bytes) = src[0, bytes) by a kernel (16 bytes a thread where both are 16-byte aligned),
/// not a copy engine: a memcpy or memset node in a CUDA graph, or on a stream between kernels,
/// makes the engines wait for each other (a 120-kernel graph replayed 28 µs slower with one
/// memcpy node first, 48 µs with a memset; bench/RESULTS.md, sixteenth measurement). The ranges
/// must not overlap. Either may be pinned host memory (the kernel reads or writes it over the
/// bus: a fault word read back).
cudaError_t launch_device_copy(void* dst, const void* src, size_t bytes, cudaStream_t stream);

/// Up to kMaxValues int64 values written by a kernel (Shape, Size).
struct Int64Values {
  static constexpr int kMaxValues = 16;
  int count = 0;
  int64_t values[kMaxValues] = {};
};
cudaError_t launch_write_int64s(int64_t* dst, const Int64Values& values, cudaStream_t stream);

/// dst (contiguous, shape view.dims) [i] = src[sum_k i_k * view.strides[k]]. The view should
/// have its size-1 dims dropped and contiguous neighbours merged (a batched 2-D transpose then
/// goes through shared-memory tiles; a contiguous view is one copy kernel).
cudaError_t launch_strided_copy(const void* src, void* dst, int elem_size, const StridedView& view,
                                cudaStream_t stream);

/// Up to kMaxInputs Concat inputs, written into the columns [dst_offset, dst_offset + span) of
/// every one of the `outer` rows (dst_row elements each) of the output.
struct ConcatChunk {
  static constexpr int kMaxInputs = 32;
  int count = 0;
  const void* src[kMaxInputs] = {};
  int64_t block[kMaxInputs] = {};  ///< elements of input j per row (its axis dim x inner)
  int64_t begin[kMaxInputs] = {};  ///< where input j's block starts within the span
  int64_t span = 0;
  int64_t dst_offset = 0;
  int64_t dst_row = 0;
  int64_t outer = 0;
};
cudaError_t launch_concat(void* dst, int elem_size, const ConcatChunk& chunk, cudaStream_t stream);

/// Split's outputs in one launch: each of the `outer` rows (src_row elements) of the source is
/// cut into up to kMaxOutputs column blocks, block j (block[j] elements from column begin[j])
/// going to row o of dst[j] (rows of block[j] elements), blocks in column order; columns no
/// block covers are not read (a Split of more outputs than one chunk holds takes several).
struct SplitChunk {
  static constexpr int kMaxOutputs = 32;
  int count = 0;
  void* dst[kMaxOutputs] = {};
  int64_t block[kMaxOutputs] = {};
  int64_t begin[kMaxOutputs] = {};
  int64_t src_row = 0;
  int64_t outer = 0;
};
/// Moves 16, 8, 4 or 2 bytes per thread where every block, begin, the row and every pointer
/// divide by it.
cudaError_t launch_split(const void* src, int elem_size, const SplitChunk& chunk,
                         cudaStream_t stream);

/// Pad modes, as the CPU kernel names them.
enum class PadMode : int { Constant = 0, Reflect = 1, Edge = 2, Wrap = 3 };
/// Pad (and Tile: Wrap with no leading pads): output index j along axis a reads input index
/// j - pre[a], mapped back into [0, in_dims[a]) by the mode, or the fill for Constant.
struct PadParams {
  int rank = 0;
  PadMode mode = PadMode::Constant;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t pre[kMaxRank] = {};
};
cudaError_t launch_pad(const void* src, void* dst, int elem_size, const PadParams& params,
                       uint64_t fill_bits, cudaStream_t stream);

/// Range: dst[i] = start + i * delta computed in `compute` (float32, float64, int16, int32,
/// int64; start/delta given as double for floats, int64 for integers) and stored as `out`
/// (= compute, or float16/bfloat16 for a float32 compute under --precision).
cudaError_t launch_range(DType compute, DType out, void* dst, int64_t n, double start_f,
                         double delta_f, int64_t start_i, int64_t delta_i, cudaStream_t stream);

/// Trilu over `batches` matrices of rows x cols: keeps column c of row r when c - r >= k
/// (upper) or c - r <= k (lower), zero elsewhere. k is clamped by the caller.
cudaError_t launch_trilu(const void* src, void* dst, int elem_size, int64_t batches, int64_t rows,
                         int64_t cols, int64_t k, bool upper, cudaStream_t stream);

/// EyeLike: rows x cols, `one_bits` where c - r == k, zero bytes elsewhere.
cudaError_t launch_eye_like(void* dst, int elem_size, int64_t rows, int64_t cols, int64_t k,
                            uint64_t one_bits, cudaStream_t stream);

// Gather/scatter: `indices` are device int32 or int64 (index_dtype). Negative indices count
// from the end; an index outside [-dim, dim) is never followed: gathers write zero bytes for it
// and scatters skip it, and the kernel records `error_code` in `*error` (the partition's error
// word, CudaRunContext::device_error), which the partition checks once its work is done — the
// run then fails naming the node, as on the cpu, without a sync per kernel.

/// Gather: dst[o, i, n] = data[o, indices[i], n] with data viewed as [outer, dim, inner].
cudaError_t launch_gather(const void* data, const void* indices, DType index_dtype, void* dst,
                          int elem_size, int64_t outer, int64_t dim, int64_t num_indices,
                          int64_t inner, int32_t* error, int32_t error_code, cudaStream_t stream);

/// GatherElements / ScatterElements: an index tensor of shape idx_dims (rank dims) addresses
/// data (row-major strides data_strides) at its own coordinates, with the one on `axis`
/// replaced by the index value.
struct ElementsParams {
  int rank = 0;
  int axis = 0;
  int64_t axis_dim = 0;
  int64_t idx_dims[kMaxRank] = {};
  int64_t data_strides[kMaxRank] = {};
  int32_t* error = nullptr;  ///< where an out-of-range index is recorded (may be null)
  int32_t error_code = 0;
};
cudaError_t launch_gather_elements(const void* data, const void* indices, DType index_dtype,
                                   void* dst, int elem_size, const ElementsParams& params,
                                   cudaStream_t stream);

/// GatherND / ScatterND: each tuple of `m` indices addresses a slice of `slice` elements.
/// GatherND: tuple t (of batch * tuples_per_batch) reads data at (t / tuples_per_batch) *
/// batch_stride plus its tuple's offset.
struct TupleParams {
  int m = 0;
  int64_t dims[kMaxRank] = {};     ///< sizes of the indexed axes
  int64_t strides[kMaxRank] = {};  ///< data strides of the indexed axes
  int64_t num_tuples = 0;          ///< all tuples
  int64_t tuples_per_batch = 1;    ///< GatherND batch_dims grouping (ScatterND: num_tuples)
  int64_t batch_stride = 0;
  int64_t slice = 1;
  int32_t* error = nullptr;  ///< where an out-of-range index is recorded (may be null)
  int32_t error_code = 0;
};
cudaError_t launch_gather_nd(const void* data, const void* indices, DType index_dtype, void* dst,
                             int elem_size, const TupleParams& params, cudaStream_t stream);

/// Scatter reductions, as the CPU kernel names them.
enum class Reduction : int { None = 0, Add = 1, Mul = 2, Max = 3, Min = 4 };

/// ScatterElements into `out` (already a copy of data): update at position p (row-major over
/// idx_dims) goes to its data coordinates. Reduction None: duplicates resolve to the last
/// update in row-major order, as on the CPU, through `winners` (one int32 per element of out,
/// scratch); other reductions apply atomically (float sums may round in another order than the
/// CPU's). `dtype` is the data dtype (needed for reductions).
cudaError_t launch_scatter_elements(void* out, int64_t out_numel, const void* indices,
                                    DType index_dtype, const void* updates, DType dtype,
                                    Reduction reduction, const ElementsParams& params,
                                    int32_t* winners, cudaStream_t stream);

/// ScatterND into `out` (already a copy of data): tuple t's slice of updates goes to its
/// offset. Reduction None resolves duplicates to the last tuple through `winners` (one int32
/// per slice of out, i.e. out_numel / slice, scratch).
cudaError_t launch_scatter_nd(void* out, int64_t out_numel, const void* indices, DType index_dtype,
                              const void* updates, DType dtype, Reduction reduction,
                              const TupleParams& params, int32_t* winners, cudaStream_t stream);

/// OneHot: dst viewed as [outer, depth, inner]; indices (any numeric dtype, [outer, inner])
/// select the `values[1]` entry, every other is `values[0]` (values: two device elements). An
/// index v counts when -depth_value <= v < depth_value (depth = the integer part of it).
cudaError_t launch_one_hot(const void* indices, DType index_dtype, const void* values, void* dst,
                           int elem_size, int64_t outer, int64_t depth, double depth_value,
                           int64_t inner, cudaStream_t stream);

/// Resize (opset 19), mirroring the CPU kernel's coordinate math in double precision. Per axis:
/// the input and output lengths, the input stride and, for resized axes, the scale, resized
/// length, crop box and the filter's first tap and width (from the scale, on the host).
struct ResizeAxis {
  int64_t in_len = 0;
  int64_t out_len = 0;
  int64_t in_stride = 0;
  int resized = 0;
  double scale = 1.0;
  double length_resized = 0.0;
  double roi_start = 0.0;
  double roi_end = 1.0;
  double support_scale = 1.0;
  int64_t first = 0;
  int64_t width = 1;
};
/// Enum values as the CPU kernel orders them.
struct ResizeParams {
  int rank = 0;
  int mode = 0;       ///< 0 nearest, 1 linear, 2 cubic
  int transform = 0;  ///< half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners,
                      ///< asymmetric, tf_crop_and_resize, tf_half_pixel_for_nn
  int rounding = 0;   ///< round_prefer_floor, round_prefer_ceil, floor, ceil
  int exclude_outside = 0;
  int normalize = 0;  ///< divide taps by their sum (antialias or exclude_outside)
  double cubic_a = -0.75;
  uint64_t extrapolation_bits = 0;  ///< extrapolation_value in the output dtype
  ResizeAxis axes[kMaxRank];
};
/// Nearest works by element size (any dtype); linear and cubic need a numeric dtype.
cudaError_t launch_resize(const void* x, void* y, DType dtype, const ResizeParams& params,
                          cudaStream_t stream);

}  // namespace switchyard::cuda::data
