# Plain `ctest` in the repository root: the summary of the run, printed after ctest's own
# list, from the chapter preset configured last (cmake/LearnerCTest.cmake writes the build
# folder's CTestCustom.cmake; build/ctest-root.cmake names that folder).
if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/build/ctest-root.cmake")
  include("${CMAKE_CURRENT_LIST_DIR}/build/ctest-root.cmake")
  include("${_wb_last_build}/CTestCustom.cmake" OPTIONAL)
endif()
