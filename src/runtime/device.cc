#include "runtime/device.h"

#include <cstring>

#include "ir/check.h"

namespace switchyard::runtime {

ir::Tensor allocate_like(const ir::Tensor& like, HostPool& pool) {
  std::shared_ptr<void> storage = pool.allocate(like.nbytes());
  void* data = storage.get();
  return ir::Tensor::wrap(like.dtype(), like.shape(), std::move(storage), data);
}

ir::Datum map_tensors(const ir::Datum& value,
                      const std::function<ir::Tensor(const ir::Tensor&)>& f) {
  if (value.is_tensor()) return ir::Datum(f(value.tensor));
  if (value.is_sequence()) {
    std::vector<ir::Tensor> items;
    for (const ir::Tensor& t : value.sequence) items.push_back(f(t));
    return ir::Datum::make_sequence(value.sequence_dtype, std::move(items));
  }
  return value;
}

void Device::copy_into(const ir::Tensor& src, const ir::Tensor& dst) const {
  SY_ASSERT(src.dtype() == dst.dtype() && src.shape() == dst.shape());
  if (src.dtype() == ir::DType::String) {
    for (int64_t i = 0; i < src.numel(); ++i)
      const_cast<std::string*>(dst.data<std::string>())[i] = src.data<std::string>()[i];
    return;
  }
  if (src.nbytes() && src.raw() != dst.raw())
    std::memmove(const_cast<void*>(dst.raw()), src.raw(), src.nbytes());
}

ir::Datum copy_datum(const ir::Datum& value, HostPool& pool) {
  return map_tensors(value, [&](const ir::Tensor& t) {
    if (t.dtype() == ir::DType::String) return t.clone();
    ir::Tensor out = allocate_like(t, pool);
    if (t.nbytes()) std::memcpy(out.raw(), t.raw(), t.nbytes());
    return out;
  });
}

std::string device_list_text(const std::vector<const DeviceInfo*>& devices) {
  std::string s;
  for (const DeviceInfo* d : devices) s += (s.empty() ? "" : ", ") + d->id;
  return s;
}

int resolve_device(const std::string& spec, const std::vector<const DeviceInfo*>& devices) {
  auto fail = [&]() -> int {
    SY_THROW(InvalidArgument, "device '{}' does not exist (devices: {})", spec,
             device_list_text(devices));
  };
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i]->id == spec) return static_cast<int>(i);
  if (spec.rfind("cuda:", 0) == 0) {
    std::string rest = spec.substr(5);
    int best = -1;
    for (size_t i = 0; i < devices.size(); ++i) {
      const DeviceInfo& d = *devices[i];
      if (d.kind != "cuda") continue;
      if (rest.rfind("uuid=", 0) == 0 && !rest.substr(5).empty() &&
          d.uuid.rfind(rest.substr(5), 0) == 0)
        return static_cast<int>(i);
      if (rest.rfind("name=", 0) == 0 && !rest.substr(5).empty() &&
          d.name.find(rest.substr(5)) != std::string::npos)
        return static_cast<int>(i);
      if (rest == "most-memory" &&
          (best < 0 || d.memory_bytes > devices[static_cast<size_t>(best)]->memory_bytes))
        best = static_cast<int>(i);
    }
    if (best >= 0) return best;
  }
  return fail();
}

}  // namespace switchyard::runtime
