# Plain `ctest` in the repository root: the tests of your kernels in the chapter preset
# configured last (`cmake --preset ch05 && ctest`). See cmake/RootCTest.cmake.
# ctest reads this file from the folder it runs in, the repository's root. Which variable
# names that folder differs between ctest versions (CMake 4's ctest resolves "." to nothing
# and leaves CMAKE_CURRENT_LIST_DIR unset), so each is tried, ending with the process's own
# working folder.
if(POLICY CMP0152)
  cmake_policy(SET CMP0152 NEW)
endif()
file(REAL_PATH "." _wb_dot)
set(_wb_cwd "")
if(EXISTS /proc/self/cwd)
  file(REAL_PATH /proc/self/cwd _wb_cwd)
endif()
set(_wb_here "")
foreach(_wb_try IN ITEMS "${_wb_dot}" "${CMAKE_CURRENT_LIST_DIR}" "${_wb_cwd}")
  if(_wb_try AND EXISTS "${_wb_try}/cmake/RootCTest.cmake")
    set(_wb_here "${_wb_try}")
    break()
  endif()
endforeach()
if(NOT _wb_here)
  message(FATAL_ERROR "kernel-workbook: run ctest in the repository's root (the folder with CMakePresets.json), "
                      "or: cmake --preset ch01 && ctest --preset ch01")
endif()
include("${_wb_here}/cmake/RootCTest.cmake")
