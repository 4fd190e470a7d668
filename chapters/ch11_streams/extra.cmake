# Chapter 11 extras, included by workbook_add_chapter (which defines id, _chapter,
# _reference and _solutions).
#
#   ch11_overlap            the chapter's four ratios: the pipeline's overlap efficiency, a
#                           graph replay against eager launches, an update against a replay,
#                           fork/join against the serial form (chapters/ch11_streams/overlap_bench.cu)
#   ch11.timeline_plot      host test of the timeline drawing (scripts/lib/timeline_plot.py) on
#                           a small fake Nsight Systems export; the picture itself is skipped
#                           where matplotlib is missing
add_executable(${id}_overlap ${_chapter}/overlap_bench.cu)
target_link_libraries(${id}_overlap PRIVATE
  "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_spec>" "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_student>"
  "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_solution>" "$<LINK_LIBRARY:WHOLE_ARCHIVE,${id}_reference>" workbook_trace)
workbook_cuda_options(${id}_overlap)

find_program(WORKBOOK_PYTHON3 NAMES python3)
if(WORKBOOK_PYTHON3)
  add_test(NAME ${id}.timeline_plot
           COMMAND ${WORKBOOK_PYTHON3} -m unittest -v test_timeline_plot
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/scripts/lib)
  set_tests_properties(${id}.timeline_plot PROPERTIES LABELS host TIMEOUT 120)
endif()

# ch11_overlap's command line: bad input refused by name before the GPU is looked for
# (tests/tools/overlap_tool_check.sh; no GPU needed).
add_test(NAME ${id}.overlap_bad_input
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/tools/overlap_tool_check.sh $<TARGET_FILE:${id}_overlap>)
set_tests_properties(${id}.overlap_bad_input PROPERTIES LABELS host TIMEOUT 60)
