// switchyard/version.hpp — the version of these headers and of the library that runs.
#pragma once

#include "switchyard/export.hpp"

// The version these headers belong to (CMake checks that it is the project's version).
#define SWITCHYARD_VERSION_MAJOR 0
#define SWITCHYARD_VERSION_MINOR 1
#define SWITCHYARD_VERSION_PATCH 0
#define SWITCHYARD_VERSION_STRING "0.1.0"

namespace switchyard {

/// The version of the library loaded at run time, "MAJOR.MINOR.PATCH" (a static string). It
/// can differ from SWITCHYARD_VERSION_STRING when a program runs against another build.
SWITCHYARD_API const char* version();

}  // namespace switchyard
