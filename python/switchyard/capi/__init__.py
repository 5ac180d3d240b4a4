"""ONNX Runtime's ``capi`` module path: ``switchyard.capi.onnxruntime_pybind11_state`` holds the
exception classes ORT users catch."""
