#include "measure/fair.cuh"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "measure/stats.h"
#include "runtime/launch.cuh"

namespace wb::bench {

namespace {

// Waits for `stop` by polling without sleeping for a short while (so the moment it completes
// is seen at once), then as sync_with_deadline does.
void wait_for_event(const Event& stop, cudaStream_t stream, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(50)) {
    const cudaError_t st = cudaEventQuery(stop.get());
    if (st == cudaSuccess) return;
    if (st != cudaErrorNotReady) CUDA_CHECK(st);
  }
  sync_with_deadline(stream, what);
}

std::string micro(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f us", ms * 1e3);
  return buf;
}

}  // namespace

FairSampler::FairSampler(Timed t, cudaStream_t stream, std::string what)
    : t_(std::move(t)), stream_(stream), what_(std::move(what)) {
  for (int i = 0; i < 3; ++i) {
    t_.next_inputs(stream_);
    t_.launch(stream_);
  }
  sync_with_deadline(stream_, what_);
  idle_ms_ = idle_wait_ms();
}

double FairSampler::idle_wait_ms() {
  device_sync_with_deadline(what_);
  std::vector<double> idle;
  for (int i = 0; i < 5; ++i) idle.push_back(device_sync_with_deadline(what_));
  return summarize(idle).median;
}

bool FairSampler::disqualify(Code code, std::string why) {
  outcome_ = Outcome::fail(code, what_ + ": " + std::move(why));
  return false;
}

std::optional<double> FairSampler::sample() {
  if (!outcome_.passed()) return std::nullopt;
  ++taken_;
  const auto l = launch_once("timed launch " + std::to_string(taken_));
  if (!l) return std::nullopt;
  run_ms_.push_back(l->ms);
  run_waits_ms_.push_back(l->wait_ms);
  return l->ms;
}

std::optional<FairSampler::Launched> FairSampler::launch_once(const std::string& label) {
  t_.next_inputs(stream_);
  sync_with_deadline(stream_, what_);
  flusher_.flush(stream_);
  start_.record(stream_);
  t_.launch(stream_);
  // The timed stream is non-blocking, so an event on the legacy stream completes when the
  // work the launcher put there (or on a blocking stream) is done, and at once when there is
  // none. Recorded BEFORE `stop`, it can only end after `stop` when such work outlives the
  // timed stream: host delays between the two records only make it earlier. The distance is
  // read on the GPU's own clock.
  legacy_.record(cudaStreamLegacy);
  stop_.record(stream_);
  wait_for_event(stop_, stream_, what_);
  // Every sample, not only the last: each timed launch must have written its whole output
  // by the time its stream is done. Counted on the timed stream, so work still running on
  // another stream is caught while it runs, however small.
  if (t_.unwritten) {
    if (const int64_t gap = t_.unwritten(stream_); gap > 0) {
      device_sync_with_deadline(what_);
      const int64_t later = t_.unwritten(stream_);
      if (later < gap) {
        disqualify(Code::OutsideStream, label + " had left " + std::to_string(gap) +
                                            " output elements unwritten when "
                                            "its stream finished; work on another stream wrote " +
                                            std::to_string(gap - later) +
                                            " of them "
                                            "later. Launch everything on the stream the launcher is given.");
      } else {
        disqualify(
            Code::StaleAfterTiming,
            label + " left " + std::to_string(gap) +
                " output elements unwritten "
                "(they still hold the poison written before it): the launcher skipped work on that call. Compute "
                "from the inputs on every call.");
      }
      return std::nullopt;
    }
  }
  const double wait_ms = device_sync_with_deadline(what_);
  const double ms = stop_.ms_since(start_);
  const double behind_ms = legacy_.ms_since(stop_);
  if (behind_ms > std::max(0.010, 0.2 * ms)) {
    disqualify(Code::OutsideStream, "work on the default stream (or a blocking stream) finished " + micro(behind_ms) +
                                        " after the timed stream (the timed launch took " + micro(ms) +
                                        "): launch everything on the stream "
                                        "the launcher is given.");
    return std::nullopt;
  }
  return Launched{ms, wait_ms};
}

std::optional<LeftOver> FairSampler::measure_left_again() {
  idle_ms_ = idle_wait_ms();  // after a sync: nothing of the case runs meanwhile
  std::vector<double> ms, waits;
  for (int i = 0; i < 5; ++i) {
    const auto l = launch_once("re-measuring, launch " + std::to_string(i + 1));
    if (!l) return std::nullopt;
    ms.push_back(l->ms);
    waits.push_back(l->wait_ms);
  }
  return LeftOver{summarize(ms).median, summarize(waits).median - idle_ms_};
}

bool FairSampler::end_run() {
  if (!outcome_.passed()) return false;
  if (run_ms_.empty()) return true;
  std::vector<LeftOver> measured = {{summarize(run_ms_).median, summarize(run_waits_ms_).median - idle_ms_}};
  run_ms_.clear();
  run_waits_ms_.clear();
  LeftWork verdict;
  while ((verdict = judge_left_work(measured)) == LeftWork::MeasureAgain) {
    const auto again = measure_left_again();
    if (!again) return false;
    measured.push_back(*again);
  }
  if (verdict == LeftWork::Running) {
    return disqualify(Code::OutsideStream,
                      "left work running: the GPU was still busy a median of " + describe_left_work(measured) +
                          " after the timed stream had finished, each time it was measured (the timed launch took " +
                          micro(measured.front().timed_ms) +
                          "). The "
                          "launcher returns before its work is done, or puts work on a stream of its own: launch "
                          "everything on the stream it is given, so the time measured is the time it takes.");
  }
  return true;
}

bool FairSampler::finish() {
  if (!end_run()) return false;
  const Outcome last = t_.check_last();
  if (!last.passed()) {
    return disqualify(Code::StaleAfterTiming,
                      "after timing, the output of the last timed launch is wrong for the "
                      "inputs it was given (the inputs change before every timed launch). Does the launcher reuse a "
                      "result from an earlier call, or skip work it has seen before? " +
                          last.message);
  }
  return true;
}

// The SM clock during the samples, read through NVML (loaded at run time: no NVML, no
// reading), and whether the GPU reported a slowdown (thermal or power) meanwhile.
ClockWatch::ClockWatch() {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) return;
  auto init = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlInit_v2"));
  auto by_index = reinterpret_cast<int (*)(unsigned, void**)>(dlsym(lib_, "nvmlDeviceGetHandleByIndex_v2"));
  clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib_, "nvmlDeviceGetClockInfo"));
  max_clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib_, "nvmlDeviceGetMaxClockInfo"));
  reasons_ =
      reinterpret_cast<int (*)(void*, unsigned long long*)>(dlsym(lib_, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  int dev = 0;
  cudaGetDevice(&dev);
  if (!init || !by_index || !clock_ || init() != 0 || by_index(static_cast<unsigned>(dev), &device_) != 0) {
    device_ = nullptr;
    return;
  }
  unsigned mhz = 0;
  if (max_clock_ && max_clock_(device_, 1 /* SM */, &mhz) == 0) max_mhz_ = mhz;
}

void ClockWatch::reset() {
  mhz_.clear();
  slowdown_ = false;
}

void ClockWatch::sample() {
  if (!device_) return;
  unsigned mhz = 0;
  if (clock_(device_, 1 /* SM */, &mhz) == 0) mhz_.push_back(mhz);
  unsigned long long r = 0;
  // HW slowdown 0x8, SW thermal 0x20, HW thermal 0x40, HW power brake 0x80.
  if (reasons_ && reasons_(device_, &r) == 0 && (r & (0x8ull | 0x20ull | 0x40ull | 0x80ull))) slowdown_ = true;
}

double ClockWatch::median_mhz() const {
  if (mhz_.empty()) return 0;
  std::vector<double> v(mhz_.begin(), mhz_.end());
  return summarize(v).median;
}

bool ClockWatch::throttled() const {
  return slowdown_ || (max_mhz_ > 0 && !mhz_.empty() && median_mhz() < 0.85 * max_mhz_);
}

}  // namespace wb::bench
