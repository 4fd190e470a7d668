// libcupti, loaded once at run time (it ships with the CUDA toolkit; nothing links it), for
// the two users of CUPTI in the harness: the allocation count (runtime/allocations.cpp, the
// callback API) and the activity trace (runtime/activity_trace.cu, the activity API).
#pragma once
#include <string>

namespace wb {

// A CUPTI entry point by name, or nullptr with *problem saying why (the library was not
// found where the toolkit keeps it, or it lacks the symbol).
void* cupti_entry(const char* name, std::string* problem);

template <class Fn>
Fn cupti_function(const char* name, std::string* problem) {
  return reinterpret_cast<Fn>(cupti_entry(name, problem));
}

}  // namespace wb
