// Tensor (the public switchyard::Tensor) and Datum: a runtime value of any ONNX kind (tensor,
// sequence of tensors, or an empty optional).
#pragma once

#include <vector>

#include "ir/dtype.h"
#include "switchyard/tensor.hpp"

namespace switchyard::ir {

using switchyard::checked_nbytes;
using switchyard::checked_numel;
using switchyard::shape_to_string;
using switchyard::Tensor;

using switchyard::Datum;

}  // namespace switchyard::ir
