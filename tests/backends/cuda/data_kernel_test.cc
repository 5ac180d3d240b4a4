// launch_device_copy (src/backends/cuda/kernels/data.cu), the copy kernel that replaces
// copy-engine memcpys inside partitions, CUDA graphs and around their replays: every length of
// 0-70 bytes and large ones, at every source and destination offset 0-17 (the 16-byte, 4-byte
// and byte forms), a pinned host destination (a fault word read back), and nothing written
// outside the range.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cuda/kernel_test_util.h"
#include "backends/cuda/kernels/data_impl.h"

namespace switchyard::testing {
namespace {

std::vector<unsigned char> pattern(size_t bytes, uint32_t seed) {
  std::vector<unsigned char> v(bytes);
  uint32_t x = seed * 2654435761u + 1;
  for (unsigned char& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<unsigned char>(x >> 24);
    if (b == 0xFF) b = 0x7E;  // never the poison byte: a missed write shows
  }
  return v;
}

void expect_copied(size_t bytes, size_t src_offset, size_t dst_offset) {
  SCOPED_TRACE(::testing::Message()
               << bytes << " bytes, src +" << src_offset << ", dst +" << dst_offset);
  std::vector<unsigned char> data =
      pattern(bytes, static_cast<uint32_t>(bytes * 131 + src_offset * 7 + dst_offset));
  DeviceBuffer src(bytes, src_offset), dst(bytes, dst_offset);
  if (bytes) check_cuda(cudaMemcpy(src.get(), data.data(), bytes, cudaMemcpyHostToDevice), "up");
  check_cuda(cuda::data::launch_device_copy(dst.get(), src.get(), bytes, nullptr), "launch");
  sync_device();
  ir::Tensor got = dst.download(ir::DType::UInt8, {static_cast<int64_t>(bytes)});
  EXPECT_TRUE(bytes == 0 || std::memcmp(got.raw(), data.data(), bytes) == 0);
  EXPECT_TRUE(dst.guards_intact()) << "a byte outside the range was written";
}

TEST(CudaDeviceCopyKernel, EveryLengthAndAlignment) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  for (size_t bytes = 0; bytes <= 70; ++bytes)
    for (size_t so : {0, 1, 4, 8, 16, 17})
      for (size_t d : {0, 3, 4, 16}) expect_copied(bytes, so, d);
}

TEST(CudaDeviceCopyKernel, LargeCopies) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  for (size_t bytes : {size_t{1} << 20, (size_t{1} << 20) + 12, size_t{33554432} + 16})
    for (size_t offset : {0, 4, 1}) expect_copied(bytes, offset, offset);
}

TEST(CudaDeviceCopyKernel, IntoPinnedHostMemory) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  int32_t* host = nullptr;
  check_cuda(cudaMallocHost(reinterpret_cast<void**>(&host), 4 * sizeof(int32_t)), "pinned");
  for (int i = 0; i < 4; ++i) host[i] = -1;
  DeviceBuffer word(sizeof(int32_t));
  const int32_t value = 0x1234567;
  check_cuda(cudaMemcpy(word.get(), &value, sizeof value, cudaMemcpyHostToDevice), "up");
  check_cuda(cuda::data::launch_device_copy(&host[2], word.get(), sizeof(int32_t), nullptr),
             "launch");
  sync_device();
  EXPECT_EQ(host[2], value);
  EXPECT_EQ(host[1], -1);
  EXPECT_EQ(host[3], -1);
  cudaFreeHost(host);
}

TEST(CudaDeviceCopyKernel, ZeroBytesOrOneRangeOntoItselfLaunchNothing) {
  // No launch: zero bytes, or a range onto itself (no device needed).
  int x = 5;
  EXPECT_EQ(cuda::data::launch_device_copy(&x, &x, sizeof x, nullptr), cudaSuccess);
  EXPECT_EQ(cuda::data::launch_device_copy(nullptr, nullptr, 0, nullptr), cudaSuccess);
  EXPECT_EQ(x, 5);
}

}  // namespace
}  // namespace switchyard::testing
