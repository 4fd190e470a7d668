# Chapter 6 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   cuDNN   the reference (reference/ch06_layernorm/cudnn_norm.cu) calls cuDNN's backend API
#           (cudnn.h, libcudnn.so.9, 9.0 or newer). It is looked for beside the CUDA toolkit
#           first, then in the usual system places; CUDNN_ROOT (a CMake or environment
#           variable) points at another installation (the folder holding include/ and lib/).
#           cudnn.h of cuDNN 9 only dispatches to libcudnn_graph and friends at run time, so
#           linking libcudnn alone is enough.
set(_ch06_cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
find_path(CH06_CUDNN_INCLUDE_DIR cudnn.h
          HINTS ${_ch06_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS}
          PATH_SUFFIXES include include/x86_64-linux-gnu targets/x86_64-linux/include)
find_library(CH06_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
             HINTS ${_ch06_cudnn_hints} ${CUDAToolkit_LIBRARY_DIR}
             PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu targets/x86_64-linux/lib)

if(NOT CH06_CUDNN_INCLUDE_DIR OR NOT CH06_CUDNN_LIBRARY)
  set(_ch06_missing "")
  if(NOT CH06_CUDNN_INCLUDE_DIR)
    list(APPEND _ch06_missing "the header cudnn.h")
  endif()
  if(NOT CH06_CUDNN_LIBRARY)
    list(APPEND _ch06_missing "the library libcudnn.so (cuDNN 9)")
  endif()
  list(JOIN _ch06_missing " and " _ch06_missing)
  message(FATAL_ERROR "ch06: cuDNN not found: missing ${_ch06_missing}. Chapter 6's reference calls cuDNN's "
                      "backend API. Install cuDNN 9 (e.g. the cudnn9-cuda-12 or cudnn9-cuda-13 package, or "
                      "scripts/install-deps.sh), or point CUDNN_ROOT at the folder holding include/cudnn.h and "
                      "lib/libcudnn.so. Looked beside the CUDA toolkit (${CUDAToolkit_LIBRARY_DIR}) and in the "
                      "system paths.")
endif()

file(STRINGS ${CH06_CUDNN_INCLUDE_DIR}/cudnn_version.h _ch06_cudnn_major REGEX "^#define CUDNN_MAJOR [0-9]+")
string(REGEX REPLACE "^#define CUDNN_MAJOR ([0-9]+)" "\\1" _ch06_cudnn_major "${_ch06_cudnn_major}")
if(_ch06_cudnn_major AND _ch06_cudnn_major LESS 9)
  message(FATAL_ERROR "ch06: cuDNN ${_ch06_cudnn_major}.x found at ${CH06_CUDNN_INCLUDE_DIR}; the reference needs "
                      "cuDNN 9 or newer (CUDNN_ROOT picks another installation).")
endif()

target_include_directories(${id}_reference PUBLIC ${_reference} PRIVATE ${CH06_CUDNN_INCLUDE_DIR})
target_include_directories(${id}_solution PUBLIC ${_solutions})
target_link_libraries(${id}_reference PUBLIC ${CH06_CUDNN_LIBRARY})
message(STATUS "ch06: cuDNN ${_ch06_cudnn_major} from ${CH06_CUDNN_LIBRARY}")
