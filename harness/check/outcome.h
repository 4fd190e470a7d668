// What happened when a kernel was checked: one code a machine reads (the leaderboard, the
// benchmark JSON, the test summary) and a message a learner reads. Tools decide on the code,
// never on the wording, so a message can be reworded without changing any verdict.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace wb {

enum class Code {
  Pass,
  NotImplemented,    // the stub still throws: the exercise is not written yet
  CompiledNotRun,    // written, but there is no GPU here to run it
  Skipped,           // this GPU cannot run it (too old, not sm_90a, too little memory)
  NoEngine,          // the library has no engine for this shape or mode
  Wrong,             // values outside the tolerance
  Unwritten,         // output elements still hold the poison
  NaN,               // NaN or Inf written
  OobWrite,          // a write landed in the guard band before or after an output
  OobRead,           // a read past the end of an input hit unmapped memory
  WrotePadding,      // a write into the padding of a pitched output
  Fault,             // the kernel faulted (illegal address, misaligned access, ...)
  LaunchError,       // the launch itself failed (bad grid, too much shared memory, ...)
  Hang,              // still running after the time limit
  OutsideStream,     // work ran outside the stream the launcher was given
  Cached,            // a second call on the same buffers with new inputs gave stale results
  StaleAfterTiming,  // the last timed launch left a wrong output
  Nondeterministic,  // two runs on the same inputs wrote different bits
  Race,              // the race or init checker found a hazard
  Implausible,       // a time faster than the hardware allows
  AcceptedBadArgs,   // arguments the op must refuse (k > vocabulary ...) were accepted, or work was launched
  Pageable,          // host memory that must be pinned (page-locked) was pageable, or a copy bypassed it
};

// "not_implemented", "outside_stream", ...: the stable names used in files.
std::string_view code_name(Code c);
std::optional<Code> code_from_name(std::string_view name);
// Pass, and the codes that mean "not run here" rather than "wrong".
bool code_is_failure(Code c);
bool code_is_skip(Code c);

struct Outcome {
  Code code = Code::Pass;
  std::string message;  // for people

  bool passed() const { return code == Code::Pass; }
  static Outcome pass(std::string m = {}) { return {Code::Pass, std::move(m)}; }
  static Outcome fail(Code c, std::string m) { return {c, std::move(m)}; }
  static Outcome wrong(std::string m) { return {Code::Wrong, std::move(m)}; }
};

}  // namespace wb
