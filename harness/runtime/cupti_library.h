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

// A set of CUPTI entry points looked up together: a struct derived from CuptiEntries declares
// each one as WB_CUPTI_ENTRY(member, cuptiFunction); cupti_entries<Set>() makes the set once
// and returns it. `problem` says why an entry is missing (empty when every one was found).
struct CuptiEntries {
  std::string problem;
};

// A member of a CuptiEntries set: the CUPTI function `symbol`, looked up by its name when the
// set is made (in the order the members are declared).
#define WB_CUPTI_ENTRY(member, symbol) \
  decltype(&symbol) member = ::wb::cupti_function<decltype(&symbol)>(#symbol, &this->problem)

template <class Set>
const Set& cupti_entries() {
  static const Set set;
  return set;
}

// Whether every entry of the set was found; when not, *why says which is missing and why.
inline bool cupti_found(const CuptiEntries& set, std::string* why) {
  if (set.problem.empty()) return true;
  *why = set.problem;
  return false;
}

}  // namespace wb
