#include "backends/cuda/cuda_context.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

#include "backends/cuda/device.h"
#include "ir/check.h"
#include "runtime/graph_program.h"

namespace switchyard::cuda {

CudaEvent::CudaEvent(cudaStream_t stream) {
  SY_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  cudaError_t recorded = cudaEventRecord(event_, stream);
  if (recorded != cudaSuccess) {
    cudaEventDestroy(event_);
    cudaGetLastError();  // a bad stream handle is not sticky: clear it
    SY_THROW(InvalidArgument, "cannot record an event on the stream given: {}",
             cudaGetErrorString(recorded));
  }
}

CudaEvent::~CudaEvent() {
  if (event_) cudaEventDestroy(event_);
}

void CudaEvent::synchronize() const { SY_CUDA_CHECK(cudaEventSynchronize(event_)); }

std::unique_ptr<runtime::Event> CudaStream::record() { return std::make_unique<CudaEvent>(stream); }

void CudaStream::wait(const runtime::Event& event) {
  const auto* e = dynamic_cast<const CudaEvent*>(&event);
  SY_CHECK(e != nullptr, Internal, "a CUDA stream was asked to wait for another device's event");
  cudaError_t waited = cudaStreamWaitEvent(stream, e->get(), 0);
  if (waited != cudaSuccess) {
    cudaGetLastError();
    SY_THROW(InvalidArgument, "a stream cannot wait for the event given: {}",
             cudaGetErrorString(waited));
  }
}

CudaRunContext& run_context(const runtime::KernelContext& ctx) {
  auto* c = dynamic_cast<CudaRunContext*>(ctx.state().stream);
  SY_CHECK(c != nullptr, Internal, "{}: a CUDA kernel ran outside a CUDA partition",
           ctx.node().describe());
  return *c;
}

// The input's bytes on the host: the tensor itself when it is host memory, else a synchronous
// read-back on the partition's stream (not allowed while capturing a CUDA graph).
ir::Tensor host_copy(const runtime::KernelContext& ctx, size_t i) {
  const ir::Tensor& t = ctx.input(i);
  if (device_of_memory_space(runtime::memory_space_of(t)) < 0) return t;
  CudaRunContext& rc = run_context(ctx);
  SY_CHECK(!rc.capturing, Unsupported,
           "{}: input {} must be read on the host, which a CUDA graph capture cannot do",
           ctx.node().describe(), i);
  ir::Tensor out(t.dtype(), t.shape());
  if (t.nbytes()) {
    SY_CUDA_CHECK(
        cudaMemcpyAsync(out.raw(), t.raw(), t.nbytes(), cudaMemcpyDeviceToHost, rc.stream));
    SY_CUDA_CHECK(cudaStreamSynchronize(rc.stream));
    ctx.state().count_host_sync();
  }
  return out;
}

std::vector<int64_t> read_ints(const runtime::KernelContext& ctx, size_t i) {
  ir::Tensor t = host_copy(ctx, i);
  if (!ir::dtype_is_integer(t.dtype()))
    ctx.fail("input {} must be an integer tensor, got {}", i, ir::dtype_name(t.dtype()));
  return t.to_int_vector();
}

std::vector<double> read_doubles(const runtime::KernelContext& ctx, size_t i) {
  ir::Tensor t = host_copy(ctx, i);
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t k = 0; k < t.numel(); ++k) out[static_cast<size_t>(k)] = t.scalar_as_double(k);
  return out;
}

std::shared_ptr<void> upload(runtime::KernelContext& ctx, const void* data, size_t bytes) {
  CudaRunContext& rc = run_context(ctx);
  std::shared_ptr<void> block = ctx.scratch(bytes);
  // A pinned copy of the data, kept alive with the block: the async copy reads it later (and a
  // captured graph re-reads it at every replay, so the capture keeps both).
  void* pinned = nullptr;
  SY_CUDA_CHECK(cudaMallocHost(&pinned, std::max<size_t>(bytes, 1)));
  std::shared_ptr<void> host(pinned,
                             [](void* p) { release_outside_captures([p] { cudaFreeHost(p); }); });
  std::memcpy(pinned, data, bytes);
  SY_CUDA_CHECK(cudaMemcpyAsync(block.get(), pinned, bytes, cudaMemcpyHostToDevice, rc.stream));
  if (rc.keepalive) rc.keepalive->push_back(host);
  // The pinned buffer must outlive the copy: free it only once the stream has passed it.
  auto both =
      std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(block, host);
  rc.pending->push_back(host);
  return std::shared_ptr<void>(both, block.get());
}

}  // namespace switchyard::cuda
