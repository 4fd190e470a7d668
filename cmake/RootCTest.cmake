# Read by ctest in the repository root, through the CTestTestfile.cmake there:
#
#   ctest                    the learner's tests of the chapter preset configured last
#                            (build/ctest-root.cmake, written by cmake/LearnerCTest.cmake),
#                            after rebuilding what changed.
#   ctest --preset chNN      lands here only when build/chNN does not exist yet (ctest then
#                            stays in the folder it was started in): says to configure first,
#                            instead of ctest's "No tests were found!!!".
# The root CTestTestfile.cmake found the repository's root (_wb_here); the list file's own
# folder is the fallback.
if(_wb_here)
  set(_wb_root "${_wb_here}")
else()
  get_filename_component(_wb_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
endif()

# ctest's own command line: which test preset was asked for, if any (Linux; elsewhere the
# message below stays general).
set(_wb_asked "")
if(EXISTS /proc/self/cmdline)
  file(STRINGS /proc/self/cmdline _wb_args)
  set(_wb_next FALSE)
  foreach(_wb_arg IN LISTS _wb_args)
    if(_wb_next)
      set(_wb_asked "${_wb_arg}")
      break()
    elseif(_wb_arg STREQUAL "--preset")
      set(_wb_next TRUE)
    elseif(_wb_arg MATCHES "^--preset=(.+)$")
      set(_wb_asked "${CMAKE_MATCH_1}")
      break()
    endif()
  endforeach()
endif()

if(_wb_asked)
  # The configure preset behind that test preset, and its build folder.
  set(_wb_configure "${_wb_asked}")
  file(READ "${_wb_root}/CMakePresets.json" _wb_json)
  string(JSON _wb_count ERROR_VARIABLE _wb_error LENGTH "${_wb_json}" testPresets)
  if(NOT _wb_error)
    math(EXPR _wb_last "${_wb_count} - 1")
    foreach(_wb_i RANGE ${_wb_last})
      string(JSON _wb_name ERROR_VARIABLE _wb_error GET "${_wb_json}" testPresets ${_wb_i} name)
      if(_wb_name STREQUAL _wb_asked)
        string(JSON _wb_configure ERROR_VARIABLE _wb_error GET "${_wb_json}" testPresets ${_wb_i} configurePreset)
        break()
      endif()
    endforeach()
  endif()
  set(_wb_dir "${_wb_root}/build/${_wb_configure}")
  string(CONCAT _wb_text "build/${_wb_configure} is not configured yet, so there is nothing to test. Run first:\n"
               "    cmake --preset ${_wb_configure}\n"
               "then  ctest --preset ${_wb_asked}  again (it builds, then tests), or all three steps "
               "at once:  cmake --workflow --preset ${_wb_asked}")
  # ctest has made the folder for its log by now; the next `ctest --preset` will look there.
  # `cmake --preset` replaces this file with the real one.
  string(REPLACE "\"" "\\\"" _wb_quoted "${_wb_text}")
  file(WRITE "${_wb_dir}/CTestTestfile.cmake"
       "# Written by ctest before build/${_wb_configure} was configured; `cmake --preset ${_wb_configure}` replaces it.\n"
       "message(FATAL_ERROR \"${_wb_quoted}\")\n")
  message(FATAL_ERROR "${_wb_text}")
endif()

if(NOT EXISTS "${_wb_root}/build/ctest-root.cmake")
  message(FATAL_ERROR "No chapter is configured yet, so plain `ctest` has nothing to test. Start with\n"
                      "    cmake --preset ch01 && ctest\n"
                      "(or any chapter preset: cmake --list-presets). Plain `ctest` then follows the "
                      "chapter preset configured last.")
endif()
include("${_wb_root}/build/ctest-root.cmake")
if(NOT EXISTS "${_wb_last_build}/LearnerTests.cmake")
  message(FATAL_ERROR "${_wb_last_build}, the build folder of preset ${_wb_last_preset} (configured last), "
                      "is gone or incomplete. Configure it again (or another chapter preset), then ctest:\n"
                      "    cmake --preset ${_wb_last_preset}\n")
endif()
file(RELATIVE_PATH _wb_rel "${_wb_root}" "${_wb_last_build}")
message("kernel-workbook: testing your kernels in ${_wb_rel} (preset ${_wb_last_preset}, configured last; "
        "for another chapter: cmake --preset chNN, or ctest --preset chNN)")
include("${_wb_last_build}/LearnerTests.cmake")
