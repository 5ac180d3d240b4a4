// Element types: the public switchyard::DType family, named in the ir namespace too.
#pragma once

#include "switchyard/dtype.hpp"

namespace switchyard::ir {

using switchyard::BFloat16;
using switchyard::bfloat16_to_float;
using switchyard::DType;
using switchyard::dtype_is_float;
using switchyard::dtype_is_integer;
using switchyard::dtype_is_known;
using switchyard::dtype_is_signed;
using switchyard::dtype_name;
using switchyard::dtype_size;
using switchyard::Float16;
using switchyard::float_to_bfloat16;
using switchyard::float_to_half;
using switchyard::half_to_float;
template <typename T>
using DTypeOf = switchyard::DTypeOf<T>;

}  // namespace switchyard::ir
