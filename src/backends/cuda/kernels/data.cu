// Device code of the CUDA data-movement kernels (data_impl.h): fills, strided copies with a
// shared-memory tiled path for batched transposes, Concat, Pad/Tile, Range, Trilu, EyeLike
// (gathers and scatters: gather_scatter.cu; Resize: resize.cu). One thread per output element
// (grid-stride), 64-bit indexing. Range and Resize reproduce the CPU kernels'
// arithmetic bit for bit, so integer results round alike: the CPU build (GCC, x86-64-v3)
// contracts `a * b + c` into fused multiply-adds, which appear here as explicit fma() calls;
// every other product goes through __dmul_rn so nvcc cannot contract it where GCC does not.
#include "backends/cuda/kernels/data_device.cuh"

namespace switchyard::cuda::data {

namespace {

// ---- fills -------------------------------------------------------------------------------

template <typename T>
__global__ void fill_kernel(T* dst, int64_t n, T value) {
  SY_GRID_STRIDE(i, n) dst[i] = value;
}

template <typename T>
__global__ void copy_kernel(const T* src, T* dst, int64_t n) {
  SY_GRID_STRIDE(i, n) dst[i] = src[i];
}

__global__ void write_int64s_kernel(int64_t* dst, Int64Values v) {
  int i = static_cast<int>(threadIdx.x);
  if (i < v.count) dst[i] = v.values[i];
}

// ---- strided copies ----------------------------------------------------------------------

template <typename T>
__global__ void strided_copy_kernel(const T* src, T* dst, int64_t n, StridedView v) {
  SY_GRID_STRIDE(i, n) {
    int64_t offset = 0, rem = i;
    for (int d = v.rank - 1; d >= 0; --d) {
      int64_t q = rem / v.dims[d];
      offset += (rem - q * v.dims[d]) * v.strides[d];
      rem = q;
    }
    dst[i] = src[offset];
  }
}

constexpr int kTile = 32;
constexpr int kTileRowsPerPass = 8;

// dst[b][r][c] = src[batch_offset(b) + r + c * col_stride]: reads run along r, writes along c,
// so both are coalesced through a shared-memory tile. `batch` holds the batch dims and strides.
template <typename T>
__global__ void tiled_transpose_kernel(const T* src, T* dst, StridedView batch, int64_t batches,
                                       int64_t rows, int64_t cols, int64_t col_stride) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile;
  for (int64_t b = blockIdx.z; b < batches; b += gridDim.z) {
    int64_t base = 0, rem = b;
    for (int d = batch.rank - 1; d >= 0; --d) {
      int64_t q = rem / batch.dims[d];
      base += (rem - q * batch.dims[d]) * batch.strides[d];
      rem = q;
    }
    for (int j = threadIdx.y; j < kTile; j += kTileRowsPerPass) {
      int64_t r = r0 + threadIdx.x, c = c0 + j;
      if (r < rows && c < cols) tile[j][threadIdx.x] = src[base + r + c * col_stride];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < kTile; j += kTileRowsPerPass) {
      int64_t r = r0 + j, c = c0 + threadIdx.x;
      if (r < rows && c < cols) dst[(b * rows + r) * cols + c] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
}

template <typename T>
__global__ void concat_kernel(T* dst, ConcatChunk c) {
  const int64_t n = c.outer * c.span;
  SY_GRID_STRIDE(i, n) {
    int64_t o = i / c.span, p = i - o * c.span;
    // The last input starting at or before p (empty inputs are passed over).
    int j = 0;
    while (j + 1 < c.count && c.begin[j + 1] <= p) ++j;
    const T* s = static_cast<const T*>(c.src[j]);
    dst[o * c.dst_row + c.dst_offset + p] = s[o * c.block[j] + (p - c.begin[j])];
  }
}

template <typename T>
__global__ void split_kernel(const T* src, SplitChunk c) {
  const int64_t n = c.outer * c.src_row;
  SY_GRID_STRIDE(i, n) {
    int64_t o = i / c.src_row, p = i - o * c.src_row;
    // The last output starting at or before p (empty outputs are passed over).
    int j = 0;
    while (j + 1 < c.count && c.begin[j + 1] <= p) ++j;
    const int64_t q = p - c.begin[j];
    if (q >= 0 && q < c.block[j]) static_cast<T*>(c.dst[j])[o * c.block[j] + q] = src[i];
  }
}

// Source index along one axis for output index j (-1: the pad value), as the CPU computes it.
__device__ __forceinline__ int64_t pad_source(PadMode mode, int64_t j, int64_t pre, int64_t d) {
  int64_t i = j - pre;
  if (i >= 0 && i < d) return i;
  switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      return i < 0 ? 0 : d - 1;
    case PadMode::Wrap:
      return ((i % d) + d) % d;
    case PadMode::Reflect: {
      if (d == 1) return 0;
      int64_t period = 2 * (d - 1);
      int64_t m = ((i % period) + period) % period;
      return m < d ? m : period - m;
    }
  }
  return -1;
}

template <typename T>
__global__ void pad_kernel(const T* src, T* dst, int64_t n, PadParams p, T fill) {
  SY_GRID_STRIDE(i, n) {
    int64_t rem = i, offset = 0;
    bool filled = false;
    for (int a = p.rank - 1; a >= 0; --a) {
      int64_t q = rem / p.out_dims[a];
      int64_t s = pad_source(p.mode, rem - q * p.out_dims[a], p.pre[a], p.in_dims[a]);
      rem = q;
      if (s < 0)
        filled = true;
      else
        offset += s * p.in_strides[a];
    }
    dst[i] = filled ? fill : src[offset];
  }
}

// ---- generators --------------------------------------------------------------------------

// start + i * delta in T, floats with one rounding (a fused multiply-add, as on the CPU).
template <typename T>
__device__ __forceinline__ T range_value(T start, T delta, int64_t i) {
  if constexpr (std::is_same_v<T, float>)
    return fmaf(static_cast<float>(i), delta, start);
  else if constexpr (std::is_same_v<T, double>)
    return fma(static_cast<double>(i), delta, start);
  else
    return static_cast<T>(start + static_cast<T>(i) * delta);
}

template <typename C, typename O>
__global__ void range_kernel(O* dst, int64_t n, C start, C delta) {
  SY_GRID_STRIDE(i, n) {
    C v = range_value(start, delta, i);
    if constexpr (std::is_same_v<C, O>)
      dst[i] = v;
    else
      dst[i] = dev::from_float<O>(v);
  }
}

template <typename T>
__global__ void trilu_kernel(const T* src, T* dst, int64_t n, int64_t rows, int64_t cols, int64_t k,
                             bool upper) {
  SY_GRID_STRIDE(i, n) {
    int64_t t = i / cols;
    int64_t d = (i - t * cols) - t % rows;
    bool keep = upper ? d >= k : d <= k;
    dst[i] = keep ? src[i] : T(0);
  }
}

template <typename T>
__global__ void eye_like_kernel(T* dst, int64_t n, int64_t cols, int64_t k, T one) {
  SY_GRID_STRIDE(i, n) {
    int64_t r = i / cols;
    dst[i] = (i - r * cols) - r == k ? one : T(0);
  }
}

}  // namespace

// ---- launchers ---------------------------------------------------------------------------

cudaError_t launch_fill(void* dst, int64_t n, int elem_size, uint64_t bits, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    fill_kernel<T>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, from_bits<T>(bits));
    return cudaGetLastError();
  });
}

cudaError_t launch_device_copy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return cudaSuccess;
  const uintptr_t both = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = static_cast<int64_t>(bytes / sizeof(T));
    copy_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(src),
                                                           static_cast<T*>(dst), n);
    return cudaGetLastError();
  };
  if ((both | bytes) % 16 == 0) return launch(uint4{});
  if ((both | bytes) % 4 == 0) return launch(uint32_t{});
  return launch(uint8_t{});
}

cudaError_t launch_write_int64s(int64_t* dst, const Int64Values& values, cudaStream_t stream) {
  if (values.count <= 0) return cudaSuccess;
  write_int64s_kernel<<<1, Int64Values::kMaxValues, 0, stream>>>(dst, values);
  return cudaGetLastError();
}

cudaError_t launch_strided_copy(const void* src, void* dst, int elem_size, const StridedView& view,
                                cudaStream_t stream) {
  const int64_t n = product(view.dims, view.rank);
  if (n == 0) return cudaSuccess;
  if (view.rank == 0 || (view.rank == 1 && view.strides[0] == 1))
    return launch_device_copy(dst, src, static_cast<size_t>(n) * static_cast<size_t>(elem_size),
                              stream);
  const int r = view.rank;
  const int64_t rows = r >= 2 ? view.dims[r - 2] : 0, cols = view.dims[r - 1];
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  if (r >= 2 && view.strides[r - 2] == 1 && view.strides[r - 1] != 1 && rows >= 8 && cols >= 8 &&
      row_tiles <= 65535 && col_tiles <= 0x7fffffff) {
    StridedView batch;
    batch.rank = r - 2;
    for (int d = 0; d < r - 2; ++d) {
      batch.dims[d] = view.dims[d];
      batch.strides[d] = view.strides[d];
    }
    const int64_t batches = n / (rows * cols);
    dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(row_tiles),
              static_cast<unsigned>(batches < 65535 ? batches : 65535));
    dim3 block(kTile, kTileRowsPerPass);
    return dispatch_size(elem_size, [&](auto tag) {
      using T = decltype(tag);
      tiled_transpose_kernel<T><<<grid, block, 0, stream>>>(static_cast<const T*>(src),
                                                            static_cast<T*>(dst), batch, batches,
                                                            rows, cols, view.strides[r - 1]);
      return cudaGetLastError();
    });
  }
  // A contiguous innermost dim moves in chunks of up to 16 bytes, one chunk per thread (8
  // float16 at a time: BERT's head split [b, s, h, d] -> [b, h, s, d]), when the chunks line
  // up: the dim's length and every other stride divide by the chunk, both pointers align to it.
  StridedView wide = view;
  int width = elem_size;
  auto aligned = [](const void* p, int bytes) {
    return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
  };
  while (view.strides[r - 1] == 1 && width * 2 <= 16 && wide.dims[r - 1] % 2 == 0 &&
         aligned(src, width * 2) && aligned(dst, width * 2)) {
    bool divisible = true;
    for (int d = 0; d < r - 1; ++d) divisible = divisible && wide.strides[d] % 2 == 0;
    if (!divisible) break;
    wide.dims[r - 1] /= 2;
    for (int d = 0; d < r - 1; ++d) wide.strides[d] /= 2;
    width *= 2;
  }
  const int64_t chunks = n * elem_size / width;
  if (width == 16) {
    strided_copy_kernel<uint4><<<blocks_for(chunks), kThreads, 0, stream>>>(
        static_cast<const uint4*>(src), static_cast<uint4*>(dst), chunks, wide);
    return cudaGetLastError();
  }
  return dispatch_size(width, [&](auto tag) {
    using T = decltype(tag);
    strided_copy_kernel<T><<<blocks_for(chunks), kThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), chunks, wide);
    return cudaGetLastError();
  });
}

cudaError_t launch_concat(void* dst, int elem_size, const ConcatChunk& chunk, cudaStream_t stream) {
  const int64_t n = chunk.outer * chunk.span;
  if (n == 0 || chunk.count == 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    concat_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), chunk);
    return cudaGetLastError();
  });
}

cudaError_t launch_split(const void* src, int elem_size, const SplitChunk& chunk,
                         cudaStream_t stream) {
  if (chunk.outer * chunk.src_row == 0 || chunk.count == 0) return cudaSuccess;
  // Widen the unit while every length, offset and pointer divides by the wider one.
  SplitChunk c = chunk;
  int width = elem_size;
  auto fits = [&](int bytes) {
    const int k = bytes / elem_size;
    if (bytes > 16 || bytes % elem_size != 0 || c.src_row % k != 0 ||
        reinterpret_cast<uintptr_t>(src) % static_cast<uintptr_t>(bytes) != 0)
      return false;
    for (int j = 0; j < c.count; ++j)
      if (chunk.block[j] % k != 0 || chunk.begin[j] % k != 0 ||
          reinterpret_cast<uintptr_t>(chunk.dst[j]) % static_cast<uintptr_t>(bytes) != 0)
        return false;
    return true;
  };
  while (fits(width * 2)) width *= 2;
  const int k = width / elem_size;
  c.src_row = chunk.src_row / k;
  for (int j = 0; j < c.count; ++j) {
    c.block[j] = chunk.block[j] / k;
    c.begin[j] = chunk.begin[j] / k;
  }
  const int64_t n = c.outer * c.src_row;
  if (width == 16) {
    split_kernel<uint4><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint4*>(src), c);
    return cudaGetLastError();
  }
  return dispatch_size(width, [&](auto tag) {
    using T = decltype(tag);
    split_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(src), c);
    return cudaGetLastError();
  });
}

cudaError_t launch_pad(const void* src, void* dst, int elem_size, const PadParams& params,
                       uint64_t fill_bits, cudaStream_t stream) {
  const int64_t n = product(params.out_dims, params.rank);
  if (n == 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    pad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), n, params, from_bits<T>(fill_bits));
    return cudaGetLastError();
  });
}

cudaError_t launch_range(DType compute, DType out, void* dst, int64_t n, double start_f,
                         double delta_f, int64_t start_i, int64_t delta_i, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  auto launch = [&](auto ctag, auto otag) {
    using C = decltype(ctag);
    using O = decltype(otag);
    C start, delta;
    if constexpr (std::is_floating_point_v<C>) {
      start = static_cast<C>(start_f);
      delta = static_cast<C>(delta_f);
    } else {
      start = static_cast<C>(start_i);
      delta = static_cast<C>(delta_i);
    }
    range_kernel<C, O>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<O*>(dst), n, start, delta);
    return cudaGetLastError();
  };
  if (compute == DType::Float32 && out == DType::Float16) return launch(float{}, __half{});
  if (compute == DType::Float32 && out == DType::BFloat16) return launch(float{}, __nv_bfloat16{});
  if (compute != out) return cudaErrorInvalidValue;
  switch (compute) {
    case DType::Float32:
      return launch(float{}, float{});
    case DType::Float64:
      return launch(double{}, double{});
    case DType::Int16:
      return launch(int16_t{}, int16_t{});
    case DType::Int32:
      return launch(int32_t{}, int32_t{});
    case DType::Int64:
      return launch(int64_t{}, int64_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_trilu(const void* src, void* dst, int elem_size, int64_t batches, int64_t rows,
                         int64_t cols, int64_t k, bool upper, cudaStream_t stream) {
  const int64_t n = batches * rows * cols;
  if (n == 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    trilu_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), n, rows, cols, k, upper);
    return cudaGetLastError();
  });
}

cudaError_t launch_eye_like(void* dst, int elem_size, int64_t rows, int64_t cols, int64_t k,
                            uint64_t one_bits, cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    eye_like_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, cols, k,
                                                               from_bits<T>(one_bits));
    return cudaGetLastError();
  });
}

}  // namespace switchyard::cuda::data
