# Plain `ctest` in the repository root: the tests of your kernels in the chapter preset
# configured last (`cmake --preset ch05 && ctest`). See cmake/RootCTest.cmake.
# ctest reads this file from the folder it runs in, the repository's root: "." names it
# (CMAKE_CURRENT_LIST_DIR is tried too, for ctest versions where "." resolves elsewhere).
file(REAL_PATH "." _wb_dot)
set(_wb_here "")
foreach(_wb_try IN ITEMS "${_wb_dot}" "${CMAKE_CURRENT_LIST_DIR}")
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
