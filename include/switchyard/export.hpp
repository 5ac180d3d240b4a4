// switchyard/export.hpp — symbol visibility for the public API.
#pragma once

#if defined(SWITCHYARD_BUILDING_LIBRARY)
#define SWITCHYARD_API __attribute__((visibility("default")))
#else
#define SWITCHYARD_API
#endif
