// fuzz_import: bytes -> the ONNX importer (protobuf parse, tensor and attribute conversion, opset
// normalisation, verification) -> type and shape inference of every node (ops::infer_types, as
// compile runs it first). Structure-aware mutation comes from onnx_mutator.cc.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "fuzz_common.h"
#include "ir/graph.h"
#include "onnx/import.h"
#include "ops/schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  switchyard::fuzz::run_expecting_only_errors("fuzz_import", [&] {
    std::unique_ptr<switchyard::ir::Graph> graph =
        switchyard::onnx_import::import_model_from_bytes(data, size, "", "fuzz");
    switchyard::ops::infer_types(*graph);
  });
  return 0;
}
