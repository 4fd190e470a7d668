#include "runtime/allocations.cuh"

#include "runtime/cupti_library.h"

#include <cupti.h>  // with the calls' parameter structs (generated_cuda_meta.h, generated_cuda_runtime_api_meta.h)
#include <map>
#include <mutex>

namespace wb {

namespace {

// CUPTI's entry points, from libcupti loaded at run time.
struct Cupti : CuptiEntries {
  WB_CUPTI_ENTRY(subscribe, cuptiSubscribe);
  WB_CUPTI_ENTRY(unsubscribe, cuptiUnsubscribe);
  WB_CUPTI_ENTRY(enable, cuptiEnableCallback);
  WB_CUPTI_ENTRY(result_string, cuptiGetResultString);
};

std::string result_text(const Cupti& c, CUptiResult r) {
  const char* s = nullptr;
  if (c.result_string && c.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

constexpr CUpti_CallbackId kRuntimeCalls[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
};
constexpr CUpti_CallbackId kDriverCalls[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
};

}  // namespace

struct AllocationCount::State {
  CUpti_SubscriberHandle subscriber = nullptr;
  std::mutex mutex;
  std::map<uintptr_t, size_t> live;  // allocations made while counting, not yet freed

  // A call of either API reaches here on its exit. The runtime's calls go through the
  // driver's too, so one allocation may be seen twice: the pointer is the key.
  void allocated(uintptr_t p, size_t bytes) {
    if (p == 0) return;
    std::lock_guard<std::mutex> lock(mutex);
    live[p] = bytes;
  }
  void freed(uintptr_t p) {
    std::lock_guard<std::mutex> lock(mutex);
    live.erase(p);
  }

  static void CUPTIAPI callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
    const auto* info = static_cast<const CUpti_CallbackData*>(data);
    if (info->callbackSite != CUPTI_API_EXIT) return;
    auto* self = static_cast<State*>(user);
    const void* p = info->functionParams;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
      if (*static_cast<const cudaError_t*>(info->functionReturnValue) != cudaSuccess) return;
      switch (id) {
        case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
          const auto* a = static_cast<const cudaMalloc_v3020_params*>(p);
          return self->allocated(reinterpret_cast<uintptr_t>(*a->devPtr), a->size);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
          const auto* a = static_cast<const cudaMallocPitch_v3020_params*>(p);
          return self->allocated(reinterpret_cast<uintptr_t>(*a->devPtr), *a->pitch * a->height);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
          const auto* a = static_cast<const cudaMallocManaged_v6000_params*>(p);
          return self->allocated(reinterpret_cast<uintptr_t>(*a->devPtr), a->size);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
          const auto* a = static_cast<const cudaMallocAsync_v11020_params*>(p);  // the same layout
          return self->allocated(reinterpret_cast<uintptr_t>(*a->devPtr), a->size);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020: {
          const auto* a = static_cast<const cudaMallocFromPoolAsync_v11020_params*>(p);
          return self->allocated(reinterpret_cast<uintptr_t>(*a->ptr), a->size);
        }
        case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
          return self->freed(reinterpret_cast<uintptr_t>(static_cast<const cudaFree_v3020_params*>(p)->devPtr));
        case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
        case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020:
          return self->freed(reinterpret_cast<uintptr_t>(static_cast<const cudaFreeAsync_v11020_params*>(p)->devPtr));
        default:
          return;
      }
    }
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
    if (*static_cast<const CUresult*>(info->functionReturnValue) != CUDA_SUCCESS) return;
    switch (id) {
      case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
        const auto* a = static_cast<const cuMemAlloc_v2_params*>(p);
        return self->allocated(static_cast<uintptr_t>(*a->dptr), a->bytesize);
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
        const auto* a = static_cast<const cuMemAllocPitch_v2_params*>(p);
        return self->allocated(static_cast<uintptr_t>(*a->dptr), *a->pPitch * a->Height);
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
        const auto* a = static_cast<const cuMemAllocManaged_params*>(p);
        return self->allocated(static_cast<uintptr_t>(*a->dptr), a->bytesize);
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
        const auto* a = static_cast<const cuMemAllocAsync_params*>(p);  // the same layout
        return self->allocated(static_cast<uintptr_t>(*a->dptr), a->bytesize);
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
        const auto* a = static_cast<const cuMemAllocFromPoolAsync_params*>(p);
        return self->allocated(static_cast<uintptr_t>(*a->dptr), a->bytesize);
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
        return self->freed(static_cast<uintptr_t>(static_cast<const cuMemFree_v2_params*>(p)->dptr));
      case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
      case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
        return self->freed(static_cast<uintptr_t>(static_cast<const cuMemFreeAsync_params*>(p)->dptr));
      default:
        return;
    }
  }
};

AllocationCount::AllocationCount() : state_(std::make_unique<State>()) {}

AllocationCount::~AllocationCount() {
  if (running_) stop();
}

bool AllocationCount::start() {
  if (running_) return true;
  const Cupti& c = cupti_entries<Cupti>();
  if (!cupti_found(c, &why_)) return false;
  const CUptiResult r =
      c.subscribe(&state_->subscriber, reinterpret_cast<CUpti_CallbackFunc>(&State::callback), state_.get());
  if (r != CUPTI_SUCCESS) {
    why_ = "CUPTI refused a subscriber (" + result_text(c, r) + "; is a profiler attached?)";
    state_->subscriber = nullptr;
    return false;
  }
  for (CUpti_CallbackId id : kRuntimeCalls) {
    if (const CUptiResult e = c.enable(1, state_->subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id); e != CUPTI_SUCCESS) {
      why_ = "CUPTI refused a runtime callback (" + result_text(c, e) + ")";
      c.unsubscribe(state_->subscriber);
      state_->subscriber = nullptr;
      return false;
    }
  }
  for (CUpti_CallbackId id : kDriverCalls) {
    if (const CUptiResult e = c.enable(1, state_->subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id); e != CUPTI_SUCCESS) {
      why_ = "CUPTI refused a driver callback (" + result_text(c, e) + ")";
      c.unsubscribe(state_->subscriber);
      state_->subscriber = nullptr;
      return false;
    }
  }
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->live.clear();
  running_ = true;
  return true;
}

AllocationCount::Left AllocationCount::stop() {
  Left left;
  if (!running_) return left;
  cupti_entries<Cupti>().unsubscribe(state_->subscriber);
  state_->subscriber = nullptr;
  running_ = false;
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (const auto& [p, bytes] : state_->live) {
    ++left.count;
    left.bytes += bytes;
  }
  state_->live.clear();
  return left;
}

}  // namespace wb
