#include "check/outcome.h"

#include <array>
#include <utility>

namespace wb {

namespace {
constexpr std::array<std::pair<Code, std::string_view>, 22> kNames = {{
    {Code::Pass, "pass"},
    {Code::NotImplemented, "not_implemented"},
    {Code::CompiledNotRun, "compiled_not_run"},
    {Code::Skipped, "skipped"},
    {Code::NoEngine, "no_engine"},
    {Code::Wrong, "wrong"},
    {Code::Unwritten, "unwritten"},
    {Code::NaN, "nan"},
    {Code::OobWrite, "oob_write"},
    {Code::OobRead, "oob_read"},
    {Code::WrotePadding, "wrote_padding"},
    {Code::Fault, "fault"},
    {Code::LaunchError, "launch_error"},
    {Code::Hang, "hang"},
    {Code::OutsideStream, "outside_stream"},
    {Code::Cached, "cached"},
    {Code::StaleAfterTiming, "stale_after_timing"},
    {Code::Nondeterministic, "nondeterministic"},
    {Code::Race, "race"},
    {Code::Implausible, "implausible"},
    {Code::AcceptedBadArgs, "accepted_bad_args"},
    {Code::Pageable, "pageable"},
}};
}  // namespace

std::string_view code_name(Code c) {
  for (const auto& [code, name] : kNames) {
    if (code == c) return name;
  }
  return "unknown";
}

std::optional<Code> code_from_name(std::string_view name) {
  for (const auto& [code, n] : kNames) {
    if (n == name) return code;
  }
  return std::nullopt;
}

bool code_is_skip(Code c) { return c == Code::CompiledNotRun || c == Code::Skipped || c == Code::NoEngine; }
bool code_is_failure(Code c) { return c != Code::Pass && !code_is_skip(c); }

}  // namespace wb
