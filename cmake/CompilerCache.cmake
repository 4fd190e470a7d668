# A compiler cache, so that every build folder (build/ch01, build/ch02, build/ci ...) does not
# compile the shared harness and tools again: the second chapter reuses the first one's objects.
#
#   WORKBOOK_CCACHE=ON (default)  use ccache for CUDA and C++ when it is installed
#                                 (scripts/install-deps.sh installs it); without it, nothing changes.
#   A launcher of your own (-DCMAKE_CUDA_COMPILER_LAUNCHER=... or the environment variable of
#   the same name) always wins.
#
# ccache's statistics: ccache -s; its size limit: ccache -M 10G; to bypass it for one build:
# CCACHE_DISABLE=1.
option(WORKBOOK_CCACHE "Use ccache for CUDA and C++ when it is installed" ON)

if(WORKBOOK_CCACHE)
  find_program(WORKBOOK_CCACHE_PROGRAM ccache)
  mark_as_advanced(WORKBOOK_CCACHE_PROGRAM)
endif()
set(_wb_cache_used "")
foreach(_wb_lang IN ITEMS CUDA CXX)
  if(DEFINED CMAKE_${_wb_lang}_COMPILER_LAUNCHER OR DEFINED ENV{CMAKE_${_wb_lang}_COMPILER_LAUNCHER})
    continue()  # yours
  endif()
  if(WORKBOOK_CCACHE AND WORKBOOK_CCACHE_PROGRAM)
    set(CMAKE_${_wb_lang}_COMPILER_LAUNCHER ${WORKBOOK_CCACHE_PROGRAM})
    list(APPEND _wb_cache_used ${_wb_lang})
  endif()
endforeach()
if(_wb_cache_used)
  list(JOIN _wb_cache_used " and " _wb_cache_langs)
  message(STATUS "Compiler cache: ccache for ${_wb_cache_langs} (${WORKBOOK_CCACHE_PROGRAM}; off with -DWORKBOOK_CCACHE=OFF)")
elseif(NOT WORKBOOK_CCACHE)
  message(STATUS "Compiler cache: off (WORKBOOK_CCACHE=OFF)")
elseif(NOT WORKBOOK_CCACHE_PROGRAM)
  message(STATUS "Compiler cache: none; install ccache (scripts/install-deps.sh) so that each chapter's "
                 "build reuses the harness compiled by the others")
endif()
