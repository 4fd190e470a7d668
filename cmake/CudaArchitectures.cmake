# Which GPUs to compile for. Included before enable_language(CUDA).
#
#   1. A CMAKE_CUDA_ARCHITECTURES you pass (-D...) or CUDAARCHS in the environment
#      always wins: this file never overrides it.
#   2. Otherwise WORKBOOK_CUDA_ARCHITECTURES, set by the preset:
#        auto  -> "native" when nvidia-smi sees a GPU, else the preset's
#                 WORKBOOK_PORTABLE_CUDA_ARCHITECTURES list (so configuring never
#                 fails on a machine without a GPU);
#        other -> used as given.
set(WORKBOOK_CUDA_ARCHITECTURES "auto" CACHE STRING "auto, or an architecture list")
set(WORKBOOK_PORTABLE_CUDA_ARCHITECTURES "80;90" CACHE STRING
    "Architectures used by 'auto' when no GPU is visible")

if(DEFINED CMAKE_CUDA_ARCHITECTURES)
  message(STATUS "CUDA architectures: ${CMAKE_CUDA_ARCHITECTURES} (yours)")
elseif(DEFINED ENV{CUDAARCHS})
  message(STATUS "CUDA architectures: $ENV{CUDAARCHS} (from CUDAARCHS)")
elseif(WORKBOOK_CUDA_ARCHITECTURES STREQUAL "auto")
  find_program(WORKBOOK_NVIDIA_SMI nvidia-smi)
  set(_wb_gpu "")
  if(WORKBOOK_NVIDIA_SMI)
    execute_process(COMMAND ${WORKBOOK_NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
                    RESULT_VARIABLE _wb_smi_result OUTPUT_VARIABLE _wb_gpu ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 20)
    if(NOT _wb_smi_result EQUAL 0)
      set(_wb_gpu "")
    endif()
  endif()
  if(_wb_gpu)
    set(CMAKE_CUDA_ARCHITECTURES native)
    message(STATUS "CUDA architectures: native (GPU compute capability ${_wb_gpu})")
  else()
    set(CMAKE_CUDA_ARCHITECTURES ${WORKBOOK_PORTABLE_CUDA_ARCHITECTURES})
    message(STATUS "CUDA architectures: ${CMAKE_CUDA_ARCHITECTURES} (no GPU visible; portable list)")
  endif()
else()
  set(CMAKE_CUDA_ARCHITECTURES ${WORKBOOK_CUDA_ARCHITECTURES})
  message(STATUS "CUDA architectures: ${CMAKE_CUDA_ARCHITECTURES} (from the preset)")
endif()
