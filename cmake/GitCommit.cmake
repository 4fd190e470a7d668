# Writes OUT (a .cpp defining wb::git_commit()) from the current git state of SRC.
# Run at every build; the file is rewritten only when the commit changes.
# WORKBOOK_GIT_COMMIT in the environment wins (for copies of the tree without .git).
if(DEFINED ENV{WORKBOOK_GIT_COMMIT})
  set(_commit "$ENV{WORKBOOK_GIT_COMMIT}")
  set(_rc 0)
else()
  execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE _commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
endif()
if(NOT _rc EQUAL 0 OR _commit STREQUAL "")
  set(_commit "unknown")
elseif(NOT DEFINED ENV{WORKBOOK_GIT_COMMIT})
  execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE _dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_dirty)
    string(APPEND _commit "-dirty")
  endif()
endif()
set(_text "#include \"report/version.h\"\nstd::string wb::git_commit() { return \"${_commit}\"; }\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" _old)
endif()
if(NOT _old STREQUAL _text)
  file(WRITE "${OUT}" "${_text}")
endif()
