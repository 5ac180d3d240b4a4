#include "backends/cpu/kernels/dnnl_util.h"

#include <cstring>

#include "ir/checked_math.h"

#include <omp.h>

#include "ir/check.h"

namespace switchyard::cpu {

const dnnl::engine& dnnl_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

std::optional<dnnl::memory::data_type> dnnl_data_type(ir::DType dtype) {
  using dt = dnnl::memory::data_type;
  switch (dtype) {
    case ir::DType::Float32:
      return dt::f32;
    case ir::DType::Float16:
      return dt::f16;
    case ir::DType::BFloat16:
      return dt::bf16;
    case ir::DType::Int32:
      return dt::s32;
    case ir::DType::Int8:
      return dt::s8;
    case ir::DType::UInt8:
      return dt::u8;
    default:
      return std::nullopt;
  }
}

dnnl::memory::dims dnnl_dims(const std::vector<int64_t>& dims) {
  return dnnl::memory::dims(dims.begin(), dims.end());
}

dnnl::memory::format_tag plain_format(size_t rank) {
  using tag = dnnl::memory::format_tag;
  switch (rank) {
    case 1:
      return tag::a;
    case 2:
      return tag::ab;
    case 3:
      return tag::abc;
    case 4:
      return tag::abcd;
    case 5:
      return tag::abcde;
    case 6:
      return tag::abcdef;
    default:
      SY_THROW(Internal, "no plain oneDNN format for rank {}", rank);
  }
}

dnnl::memory::desc plain_desc(const std::vector<int64_t>& dims, dnnl::memory::data_type type) {
  return dnnl::memory::desc(dnnl_dims(dims), type, plain_format(dims.size()));
}

dnnl::memory wrap_memory(const ir::Tensor& tensor, const dnnl::memory::desc& desc) {
  return wrap_memory(tensor.raw(), desc);
}

dnnl::memory wrap_memory(const void* data, const dnnl::memory::desc& desc) {
  // oneDNN takes non-const handles; inputs are only read by the primitives we pass them to.
  return dnnl::memory(desc, dnnl_engine(), const_cast<void*>(data));
}

OmpThreadScope::OmpThreadScope(int threads) : previous_(omp_get_max_threads()) {
  omp_set_num_threads(std::max(threads, 1));
}

OmpThreadScope::~OmpThreadScope() { omp_set_num_threads(previous_); }

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  return dnnl::reorder(dnnl::reorder::primitive_desc(dnnl_engine(), from, dnnl_engine(), to,
                                                     user_scratchpad_attr()));
}

namespace {
// The scratchpad a primitive needs per execution (0 when none).
dnnl::memory::desc scratchpad_desc_of(const dnnl::primitive& primitive) {
  const_dnnl_primitive_desc_t pd = primitive.get_primitive_desc();
  const dnnl_memory_desc_t* md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  return md ? dnnl::memory::desc(*md) : dnnl::memory::desc();
}
}  // namespace

void execute_primitive(const runtime::KernelContext& ctx, const dnnl::primitive& primitive,
                       const std::unordered_map<int, dnnl::memory>& args) {
  try {
    dnnl::memory::desc scratch_md = scratchpad_desc_of(primitive);
    size_t scratch_bytes = scratch_md.get_size();
    std::shared_ptr<void> scratch;
    const std::unordered_map<int, dnnl::memory>* run_args = &args;
    std::unordered_map<int, dnnl::memory> with_scratch;
    if (scratch_bytes > 0) {
      scratch = ctx.scratch(scratch_bytes);
      with_scratch = args;
      with_scratch[DNNL_ARG_SCRATCHPAD] = dnnl::memory(scratch_md, dnnl_engine(), scratch.get());
      run_args = &with_scratch;
    }
    dnnl::stream stream(dnnl_engine());
    primitive.execute(stream, *run_args);
    stream.wait();
  } catch (const dnnl::error& e) {
    SY_THROW(Internal, "{}: oneDNN execution failed: {}", ctx.node().describe(), e.what());
  }
}

void reorder_memory(const dnnl::memory& from, const dnnl::memory& to) {
  try {
    dnnl::memory src = from, dst = to;
    dnnl::reorder reorder = make_reorder(src.get_desc(), dst.get_desc());
    dnnl::memory::desc scratch_md = scratchpad_desc_of(reorder);
    std::vector<unsigned char> scratch(scratch_md.get_size());
    std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
    if (!scratch.empty())
      args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(scratch_md, dnnl_engine(), scratch.data());
    dnnl::stream stream(dnnl_engine());
    reorder.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    SY_THROW(Internal, "oneDNN reorder failed: {}", e.what());
  }
}

size_t SignatureHash::operator()(const std::vector<int64_t>& key) const {
  size_t h = key.size();
  for (int64_t v : key) h ^= std::hash<int64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

bool input_is_constant(const ir::Node& node, size_t i) {
  const ir::Value* v = node.input(i);
  return v != nullptr && v->is_constant();
}

ir::Tensor scratch_tensor(runtime::KernelContext& ctx, ir::DType dtype,
                          const std::vector<int64_t>& shape) {
  size_t bytes = ir::checked_nbytes(dtype, ir::checked_product(shape, "scratch tensor"));
  std::shared_ptr<void> storage = ctx.scratch(bytes);
  void* data = storage.get();
  return ir::Tensor::wrap(dtype, shape, std::move(storage), data);
}

std::vector<int64_t> permute4(const std::vector<int64_t>& d, const std::array<size_t, 4>& perm) {
  SY_ASSERT(d.size() == 4);
  return {d[perm[0]], d[perm[1]], d[perm[2]], d[perm[3]]};
}

ir::Tensor transposed_scratch(runtime::KernelContext& ctx, const ir::Tensor& in,
                              const std::array<size_t, 4>& perm) {
  ir::Tensor out = scratch_tensor(ctx, in.dtype(), permute4(in.shape(), perm));
  if (out.numel() == 0) return out;
  std::vector<int64_t> in_strides(4, 1);
  for (size_t i = 3; i-- > 0;) in_strides[i] = in_strides[i + 1] * in.shape()[i + 1];
  std::vector<int64_t> strides = {in_strides[perm[0]], in_strides[perm[1]], in_strides[perm[2]],
                                  in_strides[perm[3]]};
  if (auto dt = dnnl_data_type(in.dtype())) {
    dnnl::memory::desc from(dnnl_dims(out.shape()), *dt, dnnl_dims(strides));
    dnnl::memory::desc to = plain_desc(out.shape(), *dt);
    execute_primitive(
        ctx, make_reorder(from, to),
        {{DNNL_ARG_FROM, wrap_memory(in, from)}, {DNNL_ARG_TO, wrap_memory(out, to)}});
    return out;
  }
  const size_t es = ir::dtype_size(in.dtype());
  const std::vector<int64_t>& od = out.shape();
  const auto* src = static_cast<const unsigned char*>(in.raw());
  auto* dst = static_cast<unsigned char*>(out.raw());
  int64_t o = 0;
  for (int64_t a = 0; a < od[0]; ++a)
    for (int64_t b = 0; b < od[1]; ++b)
      for (int64_t c = 0; c < od[2]; ++c)
        for (int64_t d = 0; d < od[3]; ++d, ++o) {
          int64_t i = a * strides[0] + b * strides[1] + c * strides[2] + d * strides[3];
          std::memcpy(dst + static_cast<size_t>(o) * es, src + static_cast<size_t>(i) * es, es);
        }
  return out;
}

}  // namespace switchyard::cpu
