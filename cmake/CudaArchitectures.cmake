# Which GPUs to compile for. Included before enable_language(CUDA).
#
#   1. A CMAKE_CUDA_ARCHITECTURES you pass (-D...) or CUDAARCHS in the environment
#      always wins: this file never overrides it.
#   2. Otherwise WORKBOOK_CUDA_ARCHITECTURES, set by the preset:
#        auto  -> "native" when nvidia-smi sees a GPU, else the preset's
#                 WORKBOOK_PORTABLE_CUDA_ARCHITECTURES (one architecture, 80, by default:
#                 a machine without a GPU runs nothing it builds, and each extra
#                 architecture costs a full device compile of every kernel);
#        other -> used as given.
#   The configure output says which was chosen and how to change it.
set(WORKBOOK_CUDA_ARCHITECTURES "auto" CACHE STRING "auto, or an architecture list")
set(WORKBOOK_PORTABLE_CUDA_ARCHITECTURES "80" CACHE STRING
    "Architectures used by 'auto' when no GPU is visible")

# Compute capability of the first visible GPU ("9.0"), or empty: chapters with code for one
# architecture only (sm_90a) use it to decide whether to build that code.
set(WORKBOOK_GPU_CC "")
find_program(WORKBOOK_NVIDIA_SMI nvidia-smi)
if(WORKBOOK_NVIDIA_SMI)
  execute_process(COMMAND ${WORKBOOK_NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
                  RESULT_VARIABLE _wb_smi_result OUTPUT_VARIABLE _wb_smi_out ERROR_QUIET
                  OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 20)
  if(_wb_smi_result EQUAL 0 AND _wb_smi_out)
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" WORKBOOK_GPU_CC "${_wb_smi_out}")
  endif()
endif()

set(_wb_arch_how "change it with -DCMAKE_CUDA_ARCHITECTURES=<list> (e.g. 90, or \"80;90\") or CUDAARCHS=<list>")
if(DEFINED CMAKE_CUDA_ARCHITECTURES)
  message(STATUS "CUDA architectures: ${CMAKE_CUDA_ARCHITECTURES} (yours, from CMAKE_CUDA_ARCHITECTURES)")
elseif(DEFINED ENV{CUDAARCHS})
  message(STATUS "CUDA architectures: $ENV{CUDAARCHS} (yours, from CUDAARCHS)")
elseif(WORKBOOK_CUDA_ARCHITECTURES STREQUAL "auto")
  if(WORKBOOK_GPU_CC)
    set(CMAKE_CUDA_ARCHITECTURES native)
    message(STATUS "CUDA architectures: native (the visible GPU, compute capability ${WORKBOOK_GPU_CC}); "
                   "${_wb_arch_how}")
  else()
    set(CMAKE_CUDA_ARCHITECTURES ${WORKBOOK_PORTABLE_CUDA_ARCHITECTURES})
    message(STATUS "CUDA architectures: ${CMAKE_CUDA_ARCHITECTURES} (no GPU visible); ${_wb_arch_how}")
  endif()
else()
  set(CMAKE_CUDA_ARCHITECTURES ${WORKBOOK_CUDA_ARCHITECTURES})
  message(STATUS "CUDA architectures: ${CMAKE_CUDA_ARCHITECTURES} (from WORKBOOK_CUDA_ARCHITECTURES); ${_wb_arch_how}")
endif()
