# workbook_add_chapter(chNN): builds one chapter from the folders that share its name.
#
# Every chapter has the same shape, so this function needs no per-chapter code:
#
#   chapters/chNN_name/   chNN.cuh (interface)  spec.cu (the ops, declared once)
#                         ex*.cu (the learner's kernels)  variants.cu (their list)
#   reference/chNN_name/  *.cu  (library versions, "variant 0")
#   solutions/chNN_name/  *.cu  (the worked ladder v1 ... vN)
#   chapters/chNN_name/broken.cu  (broken kernels the checks must reject; optional)
#   chapters/chNN_name/host_tests.cpp, extra.cmake         (optional)
#
# Targets: chNN_spec / chNN_student / chNN_solution / chNN_reference / chNN_broken
# (libraries), chNN_tests (learner), chNN_solution_tests, chNN_selftests, chNN_bench.

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
# Every test of a chapter writes its outcomes (one JSON line each) into
# build/<preset>/Testing/outcomes/<label>; ctest's post-test command prints the run's summary
# from them (cmake/LearnerCTest.cmake, harness/report/summary.cpp).
function(workbook_outcomes_env label out_var)
  set(${out_var} "WORKBOOK_OUTCOMES=${CMAKE_BINARY_DIR}/Testing/outcomes/${label}" PARENT_SCOPE)
endfunction()

function(workbook_add_gtest target label)
  # A program generated from op specs brings its own main (harness/check/tests_main.cpp).
  if(NOT "NO_MAIN" IN_LIST ARGN)
    target_link_libraries(${target} PRIVATE workbook_gtest_main)
  endif()
  workbook_outcomes_env(${label} _env)
  gtest_discover_tests(${target}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS ${label} TIMEOUT 300 ENVIRONMENT "${_env}")
endfunction()

# The learner's tests of chapter `id`: one ctest test per exercise, `chNN.ex1_vector_add`,
# running `chNN_tests --exercise ex1_vector_add` (small shapes first, the first failure
# stops it, then the large cases and the race pass; harness/check/tests_main.cpp). One line per
# exercise in ctest's list; `ctest -R ex1` picks one. An exercise is an ex*.cu file of the
# chapter that variants.cu lists (exercises checked by another program add their own tests).
# A kernel that could not run (no GPU) fails: ctest never counts it as passed.
function(workbook_add_exercise_tests id chapter_dir)
  file(GLOB _ex RELATIVE ${chapter_dir} CONFIGURE_DEPENDS ${chapter_dir}/ex*.cu)
  file(READ ${chapter_dir}/variants.cu _variants)
  workbook_outcomes_env(${id}-student _env)
  list(SORT _ex)
  foreach(_file IN LISTS _ex)
    get_filename_component(_name ${_file} NAME_WE)
    string(FIND "${_variants}" "${_file}\"" _at)
    if(_at EQUAL -1)
      continue()
    endif()
    add_test(NAME ${id}.${_name} COMMAND ${id}_tests --exercise ${_name} --chapter ${id})
    set_tests_properties(${id}.${_name} PROPERTIES LABELS ${id}-student TIMEOUT 600 ENVIRONMENT "${_env}")
    # The same for plain `ctest` in the repository root (cmake/LearnerCTest.cmake).
    string(CONCAT _line
      "add_test([=[${id}.${_name}]=] \"${CMAKE_BINARY_DIR}/bin/${id}_tests\" --exercise ${_name} --chapter ${id})\n"
      "set_tests_properties([=[${id}.${_name}]=] PROPERTIES LABELS ${id}-student TIMEOUT 600 ENVIRONMENT \"${_env}\")\n")
    set_property(GLOBAL APPEND_STRING PROPERTY WORKBOOK_LEARNER_TESTS "${_line}")
  endforeach()
  set_property(GLOBAL APPEND PROPERTY WORKBOOK_LEARNER_PROGRAMS ${id}_tests)
endfunction()

# An exercise checked by a GoogleTest program of its own (chapter 9's block and graph
# exercises run the model): the same one line and summary record as the op exercises.
function(workbook_add_program_exercise id name file program filter)
  workbook_outcomes_env(${id}-student _env)
  set(_script ${PROJECT_SOURCE_DIR}/scripts/lib/gtest-exercise.sh)
  add_test(NAME ${id}.${name} COMMAND bash ${_script} ${name} ${file} ${id} $<TARGET_FILE:${program}> ${filter})
  set_tests_properties(${id}.${name} PROPERTIES LABELS ${id}-student TIMEOUT 600 ENVIRONMENT "${_env}")
  string(CONCAT _line
    "add_test([=[${id}.${name}]=] bash \"${_script}\" ${name} ${file} ${id} \"${CMAKE_BINARY_DIR}/bin/${program}\" \"${filter}\")\n"
    "set_tests_properties([=[${id}.${name}]=] PROPERTIES LABELS ${id}-student TIMEOUT 600 ENVIRONMENT \"${_env}\")\n")
  set_property(GLOBAL APPEND_STRING PROPERTY WORKBOOK_LEARNER_TESTS "${_line}")
  set_property(GLOBAL APPEND PROPERTY WORKBOOK_LEARNER_PROGRAMS ${program})
endfunction()

# The op specs and the launcher libraries of chapter `id`: chNN_spec, chNN_student,
# chNN_reference, chNN_solution, and chNN_broken where the chapter folder holds broken
# kernels. workbook_add_chapter calls it; so does a chapter that runs another chapter's
# kernels (chapter 9's model) when the preset did not build that chapter.
function(workbook_chapter_libraries id)
  if(TARGET ${id}_spec)
    return()
  endif()
  file(GLOB _found LIST_DIRECTORIES true ${PROJECT_SOURCE_DIR}/chapters/${id}_*)
  get_filename_component(_name ${_found} NAME)
  set(_chapter ${PROJECT_SOURCE_DIR}/chapters/${_name})
  set(_reference ${PROJECT_SOURCE_DIR}/reference/${_name})
  set(_solutions ${PROJECT_SOURCE_DIR}/solutions/${_name})
  file(GLOB _student_src CONFIGURE_DEPENDS ${_chapter}/ex*.cu ${_chapter}/variants.cu)
  file(GLOB _reference_src CONFIGURE_DEPENDS ${_reference}/*.cu)
  file(GLOB _solution_src CONFIGURE_DEPENDS ${_solutions}/*.cu)
  file(GLOB _broken_src CONFIGURE_DEPENDS ${_chapter}/broken.cu)
  add_library(${id}_spec STATIC ${_chapter}/spec.cu)
  add_library(${id}_student STATIC ${_student_src})
  add_library(${id}_reference STATIC ${_reference_src})
  add_library(${id}_solution STATIC ${_solution_src})
  set(_libs spec student reference solution)
  if(_broken_src)
    add_library(${id}_broken STATIC ${_broken_src})
    list(APPEND _libs broken)
  endif()
  foreach(_lib IN LISTS _libs)
    target_include_directories(${id}_${_lib} PUBLIC ${_chapter} ${_reference} ${_solutions})
    workbook_cuda_options(${id}_${_lib})
    target_link_libraries(${id}_${_lib} PUBLIC workbook_spec)
  endforeach()
  # The library versions and the solution ladder may time themselves (tuned configs, the
  # timed checks); the learner's and the spec's libraries need only the checks.
  foreach(_lib IN ITEMS reference solution)
    target_link_libraries(${id}_${_lib} PUBLIC workbook_bench)
  endforeach()
  target_link_libraries(${id}_reference PUBLIC CUDA::cublas)
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
  if(NOT EXISTS ${_chapter}/spec.cu)
    message(FATAL_ERROR "Chapter ${id} has no ${_chapter}/spec.cu: every chapter declares its ops there "
                        "(see chapters/ch01_indexing/spec.cu and harness/declare/op.cuh).")
  endif()

  # The op specs, and the four libraries of launchers whose variants they test.
  workbook_chapter_libraries(${id})
  # The learner's files get every warning the compiler has: `ctest --preset chNN` shows them;
  # and line information, so a sanitizer's finding names their file and line.
  target_compile_options(${id}_student PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wextra -lineinfo>)

  # Test programs: what is under test is what is linked (every variant in the libraries).
  #   chNN_tests           the learner's kernels                   label chNN-student
  #   chNN_solution_tests  the reference and every ladder step      label chNN-solution
  #   chNN_selftests       broken kernels the checks must reject     label chNN-solution
  set(_programs "tests:student" "solution_tests:reference,solution")
  if(TARGET ${id}_broken)
    list(APPEND _programs "selftests:broken")
  endif()
  foreach(_program IN LISTS _programs)
    string(REPLACE ":" ";" _parts ${_program})
    list(GET _parts 0 _suffix)
    list(GET _parts 1 _with)
    string(REPLACE "," ";" _with ${_with})
    add_executable(${id}_${_suffix} ${PROJECT_SOURCE_DIR}/harness/check/tests_main.cpp)
    set(_link "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_spec>")
    foreach(_w IN LISTS _with)
      list(APPEND _link "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_${_w}>")
    endforeach()
    target_link_libraries(${id}_${_suffix} PRIVATE ${_link} GTest::gtest)
    workbook_cuda_options(${id}_${_suffix})
    if(_suffix STREQUAL "tests")
      workbook_add_exercise_tests(${id} ${_chapter})
    else()
      workbook_add_gtest(${id}_${_suffix} ${id}-solution NO_MAIN)
    endif()
  endforeach()

  # Host-only tests of the chapter, if it has any.
  if(EXISTS ${_chapter}/host_tests.cpp)
    add_executable(${id}_host_tests ${_chapter}/host_tests.cpp)
    target_include_directories(${id}_host_tests PRIVATE ${_chapter})
    target_link_libraries(${id}_host_tests PRIVATE workbook_host_tools)
    workbook_add_gtest(${id}_host_tests host)
  endif()

  # The benchmark: learner, solution ladder and reference side by side in one run.
  add_executable(${id}_bench ${PROJECT_SOURCE_DIR}/harness/measure/bench_main.cpp)
  target_compile_definitions(${id}_bench PRIVATE WB_CHAPTER_ID="${id}")
  target_link_libraries(${id}_bench PRIVATE
    "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_spec>" "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_student>"
    "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_solution>" "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_reference>"
    workbook_bench)
  workbook_cuda_options(${id}_bench)

  # Anything else a chapter builds (an autotuner, a data generator) goes in its extra.cmake,
  # which sees id, _chapter, _reference and _solutions.
  if(EXISTS ${_chapter}/extra.cmake)
    include(${_chapter}/extra.cmake)
  endif()
endfunction()

# A chapter whose solution declares tunable variants (.tuned_by(space), harness/tune) gets
# an autotuner, chNN_tune, from its extra.cmake:  workbook_add_tuner(${id})
# Its command line is host-tested (label `host`): bad input is refused by name, with status 2,
# before any GPU work, and no config file or Markdown is left behind (tests/tools/tuner_check.sh).
function(workbook_add_tuner id)
  add_executable(${id}_tune ${PROJECT_SOURCE_DIR}/harness/tune/tune_main.cpp)
  target_compile_definitions(${id}_tune PRIVATE WB_CHAPTER_ID="${id}" WB_CONFIG_DIR="${PROJECT_SOURCE_DIR}/configs")
  target_link_libraries(${id}_tune PRIVATE
    "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_spec>" "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_solution>"
    "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_reference>")
  workbook_cuda_options(${id}_tune)
  add_test(NAME ${id}.tune_bad_input
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/tools/tuner_check.sh $<TARGET_FILE:${id}_tune> ${id}
                   ${CMAKE_CURRENT_BINARY_DIR}/tuner-check/${id})
  set_tests_properties(${id}.tune_bad_input PROPERTIES LABELS host TIMEOUT 120)
endfunction()

# A chapter's Hopper bonus, solutions/chNN_name/hopper/*.cu (and, in a chapter whose ladder has
# one folder per op family, solutions/chNN_name/<family>/hopper/*.cu): wgmma, TMA and setmaxnreg exist
# only in the architecture-specific sm_90a target, so these sources become a library built for
# sm_90a alone, whatever the architecture list says, linked into chNN_solution, which is
# compiled with WB_<ID>_HOPPER=1 (ch05 -> WB_CH05_HOPPER) so that its variant list can name
# the bonus. `what` names the bonus in the configure log. It is built when nvcc is 12.0 or
# newer (wgmma needs PTX ISA 8.0) and
#   * the architecture list names 90 (or 90a, all, all-major), or
#   * it is "native" and the GPU is compute capability 9.0, or
#   * no GPU is visible (CI and other build-only machines: the code is compiled and so
#     checked; its tests skip, naming sm_90a, when they run on no GPU or another one).
# The tests skip at run time on any GPU but compute capability 9.0 (Variant::hopper_only).
function(workbook_add_hopper_library id what)
  set(_on OFF)
  set(_archs "${CMAKE_CUDA_ARCHITECTURES}")
  if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
    if(_archs MATCHES "(^|;)90" OR _archs MATCHES "^all")
      set(_on ON)
    elseif(_archs STREQUAL "native" AND WORKBOOK_GPU_CC STREQUAL "9.0")
      set(_on ON)
    elseif(NOT WORKBOOK_GPU_CC)
      set(_on ON)
    endif()
  endif()
  if(NOT _on)
    message(STATUS "${id}: the Hopper bonus (${what}) is not built: it needs nvcc >= 12.0 and sm_90 in the "
                   "architectures (now '${_archs}', GPU '${WORKBOOK_GPU_CC}')")
    return()
  endif()
  file(GLOB _dirs ${PROJECT_SOURCE_DIR}/solutions/${id}_*)
  file(GLOB _src CONFIGURE_DEPENDS ${_dirs}/hopper/*.cu ${_dirs}/*/hopper/*.cu)
  file(GLOB _chapter ${PROJECT_SOURCE_DIR}/chapters/${id}_*)
  add_library(${id}_hopper STATIC ${_src})
  set_target_properties(${id}_hopper PROPERTIES CUDA_ARCHITECTURES 90a-real)
  target_include_directories(${id}_hopper PUBLIC ${_chapter} PRIVATE ${_dirs})
  workbook_cuda_options(${id}_hopper)
  target_link_libraries(${id}_solution PUBLIC ${id}_hopper)
  string(TOUPPER ${id} _ID)
  target_compile_definitions(${id}_solution PRIVATE WB_${_ID}_HOPPER=1)
  message(STATUS "${id}: the Hopper bonus (${what}) is built for sm_90a")
endfunction()
