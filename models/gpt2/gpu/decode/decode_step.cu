// make_decode_step (decode_step.h): the one place that turns Options::decode into a step.
#include <stdexcept>

#include "decode/decode_step.h"
#include "decode/fused_step.h"
#include "decode/ops_step.h"
#include "decode/persistent_step.h"
#include "model_impl.cuh"

namespace gpt2 {

std::unique_ptr<DecodeStep> make_decode_step(Model::Impl& m) {
  switch (m.opt.decode) {
    case DecodePath::Ops:
      return std::make_unique<OpsStep>(m);
    case DecodePath::Fused:
      return std::make_unique<FusedStep>(m);
    case DecodePath::Persistent:
      return std::make_unique<PersistentStep>(m);
  }
  throw std::invalid_argument("Options::decode: not a DecodePath");
}

}  // namespace gpt2
