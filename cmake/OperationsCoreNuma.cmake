# OperationsCoreNuma.cmake — the imported target OperationsCore::numa for libnuma (Debian:
# libnuma-dev), used by the build (CMakeLists.txt) and by the installed CMake package.
# Sets OperationsCore_NUMA_FOUND.
if(NOT TARGET OperationsCore::numa)
    find_path(OperationsCore_NUMA_INCLUDE_DIR numa.h)
    find_library(OperationsCore_NUMA_LIBRARY numa)
    mark_as_advanced(OperationsCore_NUMA_INCLUDE_DIR OperationsCore_NUMA_LIBRARY)
    if(OperationsCore_NUMA_INCLUDE_DIR AND OperationsCore_NUMA_LIBRARY)
        add_library(OperationsCore::numa UNKNOWN IMPORTED)
        set_target_properties(OperationsCore::numa PROPERTIES
            IMPORTED_LOCATION "${OperationsCore_NUMA_LIBRARY}"
            INTERFACE_INCLUDE_DIRECTORIES "${OperationsCore_NUMA_INCLUDE_DIR}")
    endif()
endif()
if(TARGET OperationsCore::numa)
    set(OperationsCore_NUMA_FOUND TRUE)
else()
    set(OperationsCore_NUMA_FOUND FALSE)
    if(PROJECT_NAME STREQUAL "OperationsCore")
        message(FATAL_ERROR "libnuma not found: install it (Debian: apt-get install libnuma-dev)")
    endif()
endif()
