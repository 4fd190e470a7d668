// Whose kernel runs each op: --kernels=WHO and --use=op:who,... (model.h).
#include <sstream>
#include <stdexcept>
#include <string>

#include "model.h"

namespace gpt2 {
namespace {

Who parse_who(std::string_view text, const std::string& where) {
  if (text == "library") return Who::Library;
  if (text == "solution") return Who::Solution;
  if (text == "student") return Who::Student;
  throw std::invalid_argument(where + ": '" + std::string(text) +
                              "' is not a kernel source; use library, solution or student");
}

Who* field(Kernels& k, std::string_view op) {
  if (op == "embedding") return &k.embedding;
  if (op == "layernorm") return &k.layernorm;
  if (op == "gemm") return &k.gemm;
  if (op == "gemv") return &k.gemv;
  if (op == "attention") return &k.attention;
  if (op == "lm_head") return &k.lm_head;
  if (op == "argmax") return &k.argmax;
  if (op == "block") return &k.block;
  if (op == "graph") return &k.graph;
  return nullptr;
}

}  // namespace

const char* who_name(Who w) { return w == Who::Library ? "library" : w == Who::Solution ? "solution" : "student"; }

std::vector<std::string> Kernels::op_names() {
  return {"embedding", "layernorm", "gemm", "gemv", "attention", "lm_head", "argmax", "block", "graph"};
}

Kernels Kernels::all(Who w) {
  Kernels k;
  for (const auto& name : op_names()) *field(k, name) = w;
  // Host code has no library form: the library composition wires and captures with the
  // solution's code.
  if (w == Who::Library) k.block = k.graph = Who::Solution;
  return k;
}

Kernels Kernels::parse(std::string_view kernels, std::string_view use) {
  Kernels k = all(parse_who(kernels, "--kernels"));
  size_t start = 0;
  while (start < use.size()) {
    size_t end = use.find(',', start);
    if (end == std::string_view::npos) end = use.size();
    const std::string_view item = use.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      throw std::invalid_argument("--use: '" + std::string(item) + "' is not op:who (e.g. layernorm:student)");
    }
    const std::string_view op = item.substr(0, colon);
    Who* f = field(k, op);
    if (f == nullptr) {
      std::string names;
      for (const auto& n : op_names()) names += (names.empty() ? "" : ", ") + n;
      throw std::invalid_argument("--use: '" + std::string(op) + "' is not an op of the model; ops: " + names);
    }
    const Who who = parse_who(item.substr(colon + 1), "--use=" + std::string(op));
    if ((op == "block" || op == "graph") && who == Who::Library) {
      throw std::invalid_argument("--use=" + std::string(op) +
                                  ":library: this op is host code, with no library form; use solution or student");
    }
    *f = who;
  }
  return k;
}

std::string Kernels::describe() const {
  std::ostringstream out;
  Kernels copy = *this;
  bool first = true;
  for (const auto& name : op_names()) {
    out << (first ? "" : " ") << name << ':' << who_name(*field(copy, name));
    first = false;
  }
  return out.str();
}

}  // namespace gpt2
