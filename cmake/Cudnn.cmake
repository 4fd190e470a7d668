# cuDNN for the chapters whose reference calls it (6: norms, 7: softmax, 8: attention).
#
#   workbook_use_cudnn(<target> <chapter id>)   adds cudnn.h and libcudnn to <target>
#
# cuDNN 9 is looked for beside the CUDA toolkit first, then in the usual system places;
# CUDNN_ROOT (a CMake or environment variable) points at another installation (the folder
# holding include/ and lib/). cudnn.h of cuDNN 9 dispatches to libcudnn_graph, _ops and
# friends at run time, so linking libcudnn alone is enough.
function(workbook_find_cudnn)
  if(WORKBOOK_CUDNN_LIBRARY AND WORKBOOK_CUDNN_INCLUDE_DIR)
    return()
  endif()
  set(_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
  find_path(WORKBOOK_CUDNN_INCLUDE_DIR cudnn.h
            HINTS ${_hints} ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include include/x86_64-linux-gnu targets/x86_64-linux/include)
  find_library(WORKBOOK_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
               HINTS ${_hints} ${CUDAToolkit_LIBRARY_DIR}
               PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu targets/x86_64-linux/lib)
endfunction()

function(workbook_use_cudnn target id)
  workbook_find_cudnn()
  if(NOT WORKBOOK_CUDNN_INCLUDE_DIR OR NOT WORKBOOK_CUDNN_LIBRARY)
    set(_missing "")
    if(NOT WORKBOOK_CUDNN_INCLUDE_DIR)
      list(APPEND _missing "the header cudnn.h")
    endif()
    if(NOT WORKBOOK_CUDNN_LIBRARY)
      list(APPEND _missing "the library libcudnn.so (cuDNN 9)")
    endif()
    list(JOIN _missing " and " _missing)
    message(FATAL_ERROR "${id}: cuDNN not found: missing ${_missing}. The chapter's reference calls cuDNN. "
                        "Install cuDNN 9 (e.g. the cudnn9-cuda-12 or cudnn9-cuda-13 package), or point CUDNN_ROOT "
                        "at the folder holding include/cudnn.h and lib/libcudnn.so. Looked beside the CUDA toolkit "
                        "(${CUDAToolkit_LIBRARY_DIR}) and in the system paths.")
  endif()
  file(STRINGS ${WORKBOOK_CUDNN_INCLUDE_DIR}/cudnn_version.h _major REGEX "^#define CUDNN_MAJOR [0-9]+")
  string(REGEX REPLACE "^#define CUDNN_MAJOR ([0-9]+)" "\\1" _major "${_major}")
  if(_major AND _major LESS 9)
    message(FATAL_ERROR "${id}: cuDNN ${_major}.x found at ${WORKBOOK_CUDNN_INCLUDE_DIR}; the reference needs "
                        "cuDNN 9 or newer (CUDNN_ROOT picks another installation).")
  endif()
  target_include_directories(${target} PRIVATE ${WORKBOOK_CUDNN_INCLUDE_DIR})
  target_link_libraries(${target} PUBLIC ${WORKBOOK_CUDNN_LIBRARY})
  message(STATUS "${id}: cuDNN ${_major} from ${WORKBOOK_CUDNN_LIBRARY}")
endfunction()
