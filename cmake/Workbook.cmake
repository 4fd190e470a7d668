# workbook_add_chapter(chNN): builds one chapter from the folders that share its name.
#
# Every chapter has the same shape, so this function needs no per-chapter code:
#
#   chapters/chNN_name/   chNN.cuh (interface)  ex*.cu (the learner's kernels)
#                         variants.cu  check.cu  tests.cu  bench.cu
#   reference/chNN_name/  *.cu  (library versions, "variant 0")
#   solutions/chNN_name/  *.cu  (the worked ladder v1 ... vN)
#   harness/selftest/chNN_*.cu  (broken kernels the checks must reject; optional)
#   chapters/chNN_name/host_tests.cpp, extra.cmake         (optional)
#
# Targets: chNN_student / chNN_solution / chNN_reference (libraries), chNN_check,
# chNN_tests (learner), chNN_solution_tests, chNN_bench (all three side by side),
# chNN_selftests.

# The chapters present in the tree, filtered by WORKBOOK_CHAPTERS.
function(workbook_chapter_list out_var)
  file(GLOB _dirs RELATIVE ${PROJECT_SOURCE_DIR}/chapters ${PROJECT_SOURCE_DIR}/chapters/ch[0-9][0-9]_*)
  list(SORT _dirs)
  set(_all "")
  foreach(_dir IN LISTS _dirs)
    string(SUBSTRING ${_dir} 0 4 _id)
    list(APPEND _all ${_id})
  endforeach()
  if(WORKBOOK_CHAPTERS STREQUAL "all")
    set(${out_var} ${_all} PARENT_SCOPE)
    return()
  endif()
  foreach(_want IN LISTS WORKBOOK_CHAPTERS)
    if(NOT _want IN_LIST _all)
      message(FATAL_ERROR "WORKBOOK_CHAPTERS names '${_want}', but there is no chapters/${_want}_* folder. "
                          "Chapters present: ${_all}. Pick a preset from `cmake --list-presets`.")
    endif()
  endforeach()
  set(${out_var} ${WORKBOOK_CHAPTERS} PARENT_SCOPE)
endfunction()

# Common compile options for every CUDA target of the book.
function(workbook_cuda_options target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wall>
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
  target_link_libraries(${target} PUBLIC workbook_harness)
endfunction()

# Each test program carries one label, which the test presets filter on:
#   chNN-student   the learner's kernels            chNN-solution  solutions, reference, self-tests
#   host           no GPU needed                    harness-gpu    the harness's own GPU tests
function(workbook_add_gtest target label)
  target_link_libraries(${target} PRIVATE workbook_gtest_main)
  gtest_discover_tests(${target}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS ${label} TIMEOUT 300)
endfunction()

function(workbook_add_chapter id)
  file(GLOB _found LIST_DIRECTORIES true ${PROJECT_SOURCE_DIR}/chapters/${id}_*)
  get_filename_component(_name ${_found} NAME)
  set(_chapter ${PROJECT_SOURCE_DIR}/chapters/${_name})
  set(_reference ${PROJECT_SOURCE_DIR}/reference/${_name})
  set(_solutions ${PROJECT_SOURCE_DIR}/solutions/${_name})
  foreach(_dir IN ITEMS ${_reference} ${_solutions})
    if(NOT IS_DIRECTORY ${_dir})
      message(FATAL_ERROR "Chapter ${id} has no ${_dir} folder; every chapter needs chapters/, reference/ and solutions/ parts.")
    endif()
  endforeach()

  # The learner's kernels, the library reference and the worked solutions.
  file(GLOB _student_src CONFIGURE_DEPENDS ${_chapter}/ex*.cu)
  file(GLOB _reference_src CONFIGURE_DEPENDS ${_reference}/*.cu)
  file(GLOB _solution_src CONFIGURE_DEPENDS ${_solutions}/*.cu)
  add_library(${id}_student STATIC ${_student_src} ${_chapter}/variants.cu)
  add_library(${id}_reference STATIC ${_reference_src})
  add_library(${id}_solution STATIC ${_solution_src})
  add_library(${id}_check STATIC ${_chapter}/check.cu)
  foreach(_lib IN ITEMS student reference solution check)
    target_include_directories(${id}_${_lib} PUBLIC ${_chapter})
    workbook_cuda_options(${id}_${_lib})
  endforeach()
  target_link_libraries(${id}_reference PUBLIC CUDA::cublas)

  # Tests: the learner's build tests the learner's kernels; the solution build tests
  # the reference and every step of the solution ladder with the same checks.
  add_executable(${id}_tests ${_chapter}/tests.cu)
  target_link_libraries(${id}_tests PRIVATE ${id}_student ${id}_check)
  workbook_cuda_options(${id}_tests)
  workbook_add_gtest(${id}_tests ${id}-student)

  add_executable(${id}_solution_tests ${_chapter}/tests.cu)
  target_compile_definitions(${id}_solution_tests PRIVATE WB_TEST_SOLUTIONS=1)
  target_link_libraries(${id}_solution_tests PRIVATE ${id}_solution ${id}_reference ${id}_check)
  workbook_cuda_options(${id}_solution_tests)
  workbook_add_gtest(${id}_solution_tests ${id}-solution)

  # Broken kernels that the chapter's checks must reject.
  file(GLOB _selftest_src CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/harness/selftest/${id}_*.cu)
  if(_selftest_src)
    add_executable(${id}_selftests ${_selftest_src})
    target_link_libraries(${id}_selftests PRIVATE ${id}_check)
    workbook_cuda_options(${id}_selftests)
    workbook_add_gtest(${id}_selftests ${id}-solution)
  endif()

  # Host-only tests of the chapter, if it has any.
  if(EXISTS ${_chapter}/host_tests.cpp)
    add_executable(${id}_host_tests ${_chapter}/host_tests.cpp)
    target_include_directories(${id}_host_tests PRIVATE ${_chapter})
    target_link_libraries(${id}_host_tests PRIVATE workbook_host)
    workbook_add_gtest(${id}_host_tests host)
  endif()

  # The benchmark: learner, solution ladder and reference side by side in one run.
  add_executable(${id}_bench ${_chapter}/bench.cu)
  target_link_libraries(${id}_bench PRIVATE ${id}_student ${id}_solution ${id}_reference ${id}_check
                        workbook_bench)
  workbook_cuda_options(${id}_bench)

  # Anything else a chapter builds (an autotuner, a data generator) goes in its extra.cmake,
  # which sees id, _chapter, _reference and _solutions.
  if(EXISTS ${_chapter}/extra.cmake)
    include(${_chapter}/extra.cmake)
  endif()
endfunction()
