# What `cmake --install` puts under the prefix besides the libraries and the CLI (installed where
# their targets are defined): the public headers, the CMake package (Switchyard::switchyard) and
# the pkg-config file. Paths in the installed files are relative, so the tree can be moved.
include(CMakePackageConfigHelpers)

# include/switchyard/version.hpp states the version by hand; it must be the project's.
set(SY_VERSION_STRING "\"${PROJECT_VERSION}\"")
set(SY_VERSION_MAJOR ${PROJECT_VERSION_MAJOR})
set(SY_VERSION_MINOR ${PROJECT_VERSION_MINOR})
set(SY_VERSION_PATCH ${PROJECT_VERSION_PATCH})
foreach(part STRING MAJOR MINOR PATCH)
  file(STRINGS ${PROJECT_SOURCE_DIR}/include/switchyard/version.hpp SY_VERSION_LINE
       REGEX "^#define SWITCHYARD_VERSION_${part} ")
  if(NOT SY_VERSION_LINE STREQUAL "#define SWITCHYARD_VERSION_${part} ${SY_VERSION_${part}}")
    message(FATAL_ERROR "include/switchyard/version.hpp says '${SY_VERSION_LINE}', but the "
                        "project's version is ${PROJECT_VERSION}: update SWITCHYARD_VERSION_*")
  endif()
endforeach()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/switchyard
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")

# The imported target is written out, not install(EXPORT)ed: the public library's one link
# dependency, libswitchyard_internal.so, is private, and an export would have to carry it with
# every layer's object library. The file names come from the target ($<TARGET_FILE_NAME:...>).
set(SY_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Switchyard)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/SwitchyardConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/SwitchyardConfig.cmake.gen
                              INSTALL_DESTINATION ${SY_CMAKE_DIR}
                              PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/SwitchyardConfig.cmake
     INPUT ${PROJECT_BINARY_DIR}/SwitchyardConfig.cmake.gen)
# Before 1.0 a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/SwitchyardConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/SwitchyardConfig.cmake
              ${PROJECT_BINARY_DIR}/SwitchyardConfigVersion.cmake
        DESTINATION ${SY_CMAKE_DIR})

file(RELATIVE_PATH SY_PC_PREFIX_FROM_PCDIR ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig
     ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" SY_PC_PREFIX_FROM_PCDIR "${SY_PC_PREFIX_FROM_PCDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/switchyard.pc.in ${PROJECT_BINARY_DIR}/switchyard.pc
               @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/switchyard.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
