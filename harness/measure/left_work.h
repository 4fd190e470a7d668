// The rule that decides, from the waits measured in measure/fair.cpp, whether a launcher left
// work running after its timed stream was done. Plain C++, so the decision is host-tested.
#pragma once
#include <string>
#include <vector>

namespace wb::bench {

// One measurement over a run of timed launches: the median launch, and the median wait for
// the whole device after the timed stream was done beyond the wait on an idle device (ms).
struct LeftOver {
  double timed_ms = 0;
  double left_ms = 0;
};

// The wait beyond idle that counts as work left running: 10 us, or a fifth of the timed
// launch when that is longer.
double left_work_threshold_ms(double timed_ms);
bool over_threshold(const LeftOver& m);

enum class LeftWork { Clean, MeasureAgain, Running };

// What to do after the measurements so far (the first one, then each re-measurement): clean
// as soon as one is under the threshold; measure again while fewer than 1 + `rechecks` were
// taken; work left running only when every one of them is over. A single long wait comes
// from a clock or power change on the first shape, or the host thread being late; work that
// a launcher leaves on another stream makes every wait long.
LeftWork judge_left_work(const std::vector<LeftOver>& measured, int rechecks = 2);

// "12.3 us, then 11.0 us and 13.1 us": the leftovers measured, for the message.
std::string describe_left_work(const std::vector<LeftOver>& measured);

}  // namespace wb::bench
