// main() of every chapter's benchmark: every op's benchmark shapes x every variant linked
// (the learner's, the solution ladder's, the library reference), each one Google Benchmark
// benchmark named op/dtype/shape/impl, checked, then timed.
//
//   build/chNN/bin/chNN_bench [--full] [--op=...] [--shape=...] [--impl=...] [--dtype=...] [--json=FILE]
//                             [--benchmark_filter=REGEX] [--benchmark_repetitions=N] [--benchmark_format=json] ...
#include <cstdio>
#include <cstring>
#include <string>

#include "measure/bench.cuh"
#include "declare/op.cuh"
#include "measure/timed.cuh"

#ifndef WB_CHAPTER_ID
#error "WB_CHAPTER_ID must name the chapter (set by the build)"
#endif
#ifndef WB_CHAPTER_TITLE
#define WB_CHAPTER_TITLE WB_CHAPTER_ID
#endif

int main(int argc, char** argv) {
  wb::bench::Suite suite(WB_CHAPTER_ID, WB_CHAPTER_TITLE);
  return suite.run(argc, argv, [&] {
    const uint64_t seed = wb::run_seed();
    for (const auto& op_ptr : wb::all_ops()) {
      const wb::OpBase& op = *op_ptr;
      const wb::OpCommon& c = op.common();
      std::vector<wb::Shape> shapes = c.bench_shapes;
      if (suite.full()) shapes.insert(shapes.end(), c.full_bench_shapes.begin(), c.full_bench_shapes.end());
      for (wb::Shape shape : shapes) {
        if (c.derive) c.derive(shape);
        // The reference first, then the ladder in order, then the learner's.
        for (wb::Role role : {wb::Role::Reference, wb::Role::Solution, wb::Role::Student}) {
          for (const wb::Variant& v : wb::all_variants()) {
            if (v.op != c.id() || v.role != role) continue;
            if (v.slow && !suite.full() && !suite.asked_for(v.name)) continue;
            wb::bench::Case k;
            k.op = c.id();
            k.dtype = c.dtype;
            k.shape = shape.text();
            k.shape_label = shape.label();
            k.impl = v.name;
            k.role = v.role;
            k.bytes = c.bytes ? c.bytes(shape) : 0;
            k.flops = c.flops ? c.flops(shape) : 0;
            k.peak = c.peak;
            if (auto why = wb::cannot_run_here(op, v, shape)) k.skip_reason = *why;
            const wb::Variant* vp = &v;
            k.verify = [&op, vp, shape, seed] {
              wb::CaseOptions opt;
              opt.seed = seed ^ 0x5EEDull;
              // The gate before timing: right on this shape, on its stream. The tests run the
              // other passes (second call, fenced inputs, determinism); a result reused between
              // calls still fails here, after timing (bench::FairSampler::finish).
              opt.first_pass_only = true;
              return wb::check_case(op, *vp, shape, opt);
            };
            k.prepare_timed = [&op, vp, shape, seed] { return wb::prepare_timed(op, *vp, shape, seed); };
            suite.add(std::move(k));
          }
        }
      }
    }
  });
}
