// The DLPack exchange structs (ABI v0.x, as dlpack.h 0.8 defines them: DLManagedTensor without
// version or flags), written here from the specification so the package needs no vendored
// header. Only the layout matters: these structs cross library boundaries (numpy, torch).
//
// The Python protocol around them: a producer's __dlpack__() returns a PyCapsule named
// "dltensor" holding a DLManagedTensor*; a consumer that takes it renames the capsule
// "used_dltensor" and calls the tensor's deleter when done. A capsule destroyed while still named
// "dltensor" was never consumed, so its destructor calls the deleter.
#pragma once

#include <cstdint>

namespace switchyard::python {

/// DLDeviceType: where the memory lives.
enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,  ///< pinned host memory: host code may read it
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,  ///< "reserved extension device": Switchyard's simulated devices
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
};

struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};

/// DLDataTypeCode.
enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  ///< in elements; null means compact row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

inline constexpr const char* kDLTensorCapsule = "dltensor";
inline constexpr const char* kUsedDLTensorCapsule = "used_dltensor";

}  // namespace switchyard::python
