# Plain `ctest` in the repository root: the tests of your kernels in the chapter preset
# configured last (`cmake --preset ch05 && ctest`). See cmake/RootCTest.cmake.
file(REAL_PATH "." _wb_here)  # ctest reads this file from the folder it runs in
include("${_wb_here}/cmake/RootCTest.cmake")
