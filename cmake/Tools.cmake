# The learner's tools, wired into CTest (docs/tools.md):
#
#   planted_bugs                 kernels with bugs planted on purpose, for the sanitizer check
#   label `sanitize`             compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on
#                                every chapter's solutions, small shapes only, and a check that
#                                the planted bugs are caught. Slow, so the test presets exclude
#                                it; run it with  ctest --test-dir build/<preset> -L sanitize
#                                (best in a -lineinfo build: the `profile` preset).
#                                Skipped, with the reason, without a GPU or compute-sanitizer.
#   label `host`                 the scripts themselves, on fixtures: plots, the Nsight Compute
#                                table, the sanitizer and resource summaries, bad input.
#
# Expects the chapter list in `_chapters` (set by the top-level CMakeLists.txt).

set(_wb_scripts ${PROJECT_SOURCE_DIR}/scripts)
set(_wb_skip 77)  # exit code of the scripts when a GPU or a tool is missing

add_executable(planted_bugs ${PROJECT_SOURCE_DIR}/harness/tests/sanitize_planted.cu)
target_link_libraries(planted_bugs PRIVATE workbook_harness)
target_compile_options(planted_bugs PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)

# --- sanitize: the planted bugs must be caught -------------------------------------------
add_test(NAME sanitize.planted_bugs_are_caught
  COMMAND bash ${_wb_scripts}/sanitize.sh --planted --no-build --build-dir ${CMAKE_BINARY_DIR} --skip-code ${_wb_skip})
set_tests_properties(sanitize.planted_bugs_are_caught PROPERTIES
  LABELS sanitize SKIP_RETURN_CODE ${_wb_skip} TIMEOUT 900)

# --- sanitize: every chapter's solutions are clean, one test per tool ----------------------
foreach(_wb_chapter IN LISTS _chapters)
  if(NOT TARGET ${_wb_chapter}_solution_tests)
    continue()
  endif()
  foreach(_wb_tool IN ITEMS memcheck racecheck synccheck initcheck)
    set(_wb_name ${_wb_chapter}.sanitize.${_wb_tool})
    add_test(NAME ${_wb_name}
      COMMAND bash ${_wb_scripts}/sanitize.sh ${_wb_chapter} --solution --no-build
              --build-dir ${CMAKE_BINARY_DIR} --tools ${_wb_tool} --skip-code ${_wb_skip}
              --log-dir ${CMAKE_BINARY_DIR}/sanitize-logs)
    set_tests_properties(${_wb_name} PROPERTIES
      LABELS sanitize SKIP_RETURN_CODE ${_wb_skip} TIMEOUT 1800)
  endforeach()
endforeach()

# --- host: the scripts on fixtures (no GPU needed) ---------------------------------------
set(_wb_check ${PROJECT_SOURCE_DIR}/tests/tools/check.sh)
foreach(_wb_case IN ITEMS plot_roofline plot_progress plot_bad_input ncu_table sanitizer_summary
                          resource_summary bad_chapter new_chapter_bad_input gpu_suite_bad_input)
  add_test(NAME tools.${_wb_case} COMMAND bash ${_wb_check} ${_wb_case} ${CMAKE_CURRENT_BINARY_DIR}/tools-tests)
  set_tests_properties(tools.${_wb_case} PROPERTIES LABELS host SKIP_RETURN_CODE ${_wb_skip} TIMEOUT 120)
endforeach()

# --- host: a chapter's test program refuses bad flags; --large-cases lists the large ones ----
if(TARGET ch01_tests)
  add_test(NAME tools.test_flags
    COMMAND bash ${_wb_check} test_flags ${CMAKE_CURRENT_BINARY_DIR}/tools-tests $<TARGET_FILE:ch01_tests>)
  set_tests_properties(tools.test_flags PROPERTIES LABELS host TIMEOUT 120)
endif()

# --- host: a chapter's benchmark refuses bad flags before it needs a GPU --------------------
if(TARGET ch01_bench)
  add_test(NAME tools.bench_flags
    COMMAND bash ${_wb_check} bench_flags ${CMAKE_CURRENT_BINARY_DIR}/tools-tests $<TARGET_FILE:ch01_bench>)
  set_tests_properties(tools.bench_flags PROPERTIES LABELS host TIMEOUT 120)
endif()

# --- host: the build/test loop: presets, the order of the test list, the root's ctest ----------
foreach(_wb_case IN ITEMS presets test_order root_ctest)
  add_test(NAME buildloop.${_wb_case}
    COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -DBIN=${CMAKE_BINARY_DIR}
            -DBUILD_ON_TEST=${WORKBOOK_BUILD_ON_TEST} -DCASE=${_wb_case}
            -DWORK=${CMAKE_CURRENT_BINARY_DIR}/buildloop-tests/${_wb_case}
            -P ${PROJECT_SOURCE_DIR}/cmake/CheckBuildLoop.cmake)
  set_tests_properties(buildloop.${_wb_case} PROPERTIES LABELS host TIMEOUT 120)
endforeach()

# --- host: each exercise file's header says which large cases its tests run -----------------
foreach(_wb_chapter IN LISTS _chapters)
  if(NOT TARGET ${_wb_chapter}_tests)
    continue()
  endif()
  file(GLOB _wb_dir ${PROJECT_SOURCE_DIR}/chapters/${_wb_chapter}_*)
  add_test(NAME ${_wb_chapter}.stub_headers
    COMMAND python3 ${_wb_scripts}/lib/check_stub_headers.py ${_wb_dir} $<TARGET_FILE:${_wb_chapter}_tests>)
  set_tests_properties(${_wb_chapter}.stub_headers PROPERTIES LABELS host TIMEOUT 120)
endforeach()

# --- host: the fusion table over made-up results of one run --------------------------------
add_test(NAME tools.fusion_table COMMAND python3 ${_wb_scripts}/lib/test_fusion_table.py)
set_tests_properties(tools.fusion_table PROPERTIES LABELS host TIMEOUT 60)
