// switchyard/export.hpp — symbol visibility for the public API.
//
// libswitchyard.so is compiled with hidden visibility: it exports what is marked SWITCHYARD_API
// and nothing else (src/CMakeLists.txt). Programs that include these headers see no attribute.
#pragma once

#if defined(SWITCHYARD_BUILDING_LIBRARY)
#define SWITCHYARD_API __attribute__((visibility("default")))
#else
#define SWITCHYARD_API
#endif
