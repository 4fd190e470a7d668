#include "runtime/activity_trace.cuh"

#include "runtime/buffers.cuh"
#include "runtime/cupti_library.h"
#include "runtime/errors.cuh"
#include "runtime/lookup.h"
#include "runtime/output_file.h"

#include <cupti.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace wb {

namespace {

// The activity API's entry points, from libcupti loaded at run time.
struct Activity : CuptiEntries {
  WB_CUPTI_ENTRY(enable, cuptiActivityEnable);
  WB_CUPTI_ENTRY(disable, cuptiActivityDisable);
  WB_CUPTI_ENTRY(register_callbacks, cuptiActivityRegisterCallbacks);
  WB_CUPTI_ENTRY(flush_all, cuptiActivityFlushAll);
  WB_CUPTI_ENTRY(next_record, cuptiActivityGetNextRecord);
  WB_CUPTI_ENTRY(timestamp, cuptiGetTimestamp);
};

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};
constexpr size_t kBufferBytes = 8 << 20;

// One span of GPU work (or a section), times in ns of CUPTI's clock.
struct Span {
  std::string kind, name;
  uint32_t stream = 0;
  uint64_t start = 0, end = 0;
};

// CUPTI calls these from its own threads: the one trace that records hands out buffers and
// reads the full ones back.
std::mutex g_mutex;
std::vector<Span>* g_spans = nullptr;

constexpr std::pair<uint8_t, const char*> kCopyKinds[] = {{CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, "copy in (HtoD)"},
                                                          {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, "copy out (DtoH)"},
                                                          {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, "copy (DtoD)"}};

const char* copy_kind(uint8_t k) { return lookup(kCopyKinds, k, "copy"); }

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  const Activity& a = cupti_entries<Activity>();
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  while (g_spans && a.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        g_spans->push_back({"kernel", k->name ? k->name : "kernel", k->streamId, k->start, k->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        const std::string kind = copy_kind(c->copyKind);
        g_spans->push_back({kind, kind + " " + std::to_string(c->bytes) + " B", c->streamId, c->start, c->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        g_spans->push_back({"memset", "memset " + std::to_string(m->bytes) + " B", m->streamId, m->start, m->end});
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
}

__global__ void warm_up_kernel(int* p) { *p += 1; }

}  // namespace

struct ActivityTrace::State {
  std::vector<Span> spans;  // filled by buffer_completed
  std::vector<Span> sections;
  bool open = false;
};

ActivityTrace::ActivityTrace() : state_(std::make_unique<State>()) {}

ActivityTrace::~ActivityTrace() {
  if (!running_) return;
  const Activity& a = cupti_entries<Activity>();
  for (auto k : kKinds) a.disable(k);
  a.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_spans = nullptr;
}

bool ActivityTrace::start() {
  if (running_) return true;
  const Activity& a = cupti_entries<Activity>();
  if (!cupti_found(a, &why_)) return false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_spans) {
      why_ = "another trace is recording in this process";
      return false;
    }
    g_spans = &state_->spans;
  }
  if (a.register_callbacks(&buffer_requested, &buffer_completed) != CUPTI_SUCCESS) {
    why_ = "CUPTI refused the activity buffers (is a profiler attached?)";
    std::lock_guard<std::mutex> lock(g_mutex);
    g_spans = nullptr;
    return false;
  }
  running_ = true;
  // CUPTI's first recorded launch and copy carry its setup (milliseconds): pay it here, on a
  // throwaway kernel and copy, so that it lands in no section.
  DeviceBuffer<int> one(1);
  int host = 0;
  begin_section("warm-up", nullptr);
  warm_up_kernel<<<1, 1>>>(one.data());
  CUDA_CHECK(cudaMemcpy(&host, one.data(), sizeof host, cudaMemcpyDeviceToHost));
  end_section(nullptr);
  a.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  state_->sections.clear();
  std::lock_guard<std::mutex> lock(g_mutex);
  state_->spans.clear();
  return true;
}

void ActivityTrace::begin_section(const std::string& name, cudaStream_t stream) {
  if (!running_) return;
  if (state_->open) end_section(stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const Activity& a = cupti_entries<Activity>();
  for (auto k : kKinds) {
    if (const CUptiResult r = a.enable(k); r != CUPTI_SUCCESS) {
      for (auto d : kKinds) a.disable(d);
      throw std::runtime_error("CUPTI refused to record kernels and copies (error " + std::to_string(r) +
                               "; is a profiler attached?)");
    }
  }
  Span s{"section", name, 0, 0, 0};
  a.timestamp(&s.start);
  state_->sections.push_back(s);
  state_->open = true;
}

void ActivityTrace::end_section(cudaStream_t stream) {
  if (!running_ || !state_->open) return;
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const Activity& a = cupti_entries<Activity>();
  a.timestamp(&state_->sections.back().end);
  for (auto k : kKinds) a.disable(k);
  state_->open = false;
}

void ActivityTrace::section(const std::string& name, cudaStream_t stream, const std::function<void()>& fn) {
  if (!running_) return;
  for (const std::string& n : {std::string(), name}) {  // the unnamed one takes CUPTI's first launches
    begin_section(n, stream);
    fn();
    end_section(stream);
  }
}

void ActivityTrace::write(const std::string& path) {
  if (!running_)
    throw std::runtime_error("the activity trace is not recording: " + (why_.empty() ? "start() it first" : why_));
  if (state_->open) end_section(nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const Activity& a = cupti_entries<Activity>();
  a.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  running_ = false;
  std::vector<Span> spans;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_spans = nullptr;
    spans.swap(state_->spans);
  }
  // Chrome's trace events: times in microseconds; the GPU's work under pid 0 (a row per
  // stream), the sections under pid 1.
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  const auto add = [&](const Span& s, int pid) {
    events.push_back({{"name", s.name},
                      {"cat", s.kind},
                      {"ph", "X"},
                      {"pid", pid},
                      {"tid", s.stream},
                      {"ts", s.start / 1e3},
                      {"dur", (s.end - s.start) / 1e3}});
  };
  const auto unnamed = [&](const Span& w) {
    for (const auto& sec : state_->sections) {
      if (sec.name.empty() && w.start >= sec.start && w.start < sec.end) return true;
    }
    return false;
  };
  for (const auto& s : spans) {
    if (!unnamed(s)) add(s, 0);
  }
  for (const auto& s : state_->sections) {
    if (!s.name.empty()) add(s, 1);
  }
  nlohmann::ordered_json doc = {{"traceEvents", events},
                                {"displayTimeUnit", "ns"},
                                {"otherData", {{"recorded_by", "kernel-workbook ActivityTrace (CUPTI activity API)"}}}};
  write_file_atomically(path, doc.dump() + "\n");
}

}  // namespace wb
