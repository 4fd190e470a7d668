// The ops and variants linked into a program. WB_OPS / WB_VARIANTS blocks only record a
// function at static-initialization time; the functions run on first use, after main has
// started, so no spec depends on the order of static constructors.
#include <stdexcept>

#include "declare/op.cuh"

namespace wb {

namespace {

struct Registry {
  std::vector<void (*)()> op_fns;
  std::vector<std::pair<Role, VariantList (*)()>> variant_fns;
  std::vector<std::unique_ptr<OpBase>> ops;
  std::vector<Variant> variants;
  bool ops_done = false, variants_done = false;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void add_op(std::unique_ptr<OpBase> op) {
  for (const auto& o : registry().ops) {
    if (o->common().id() == op->common().id()) {
      throw std::logic_error("op " + op->common().id() + " is declared twice");
    }
  }
  registry().ops.push_back(std::move(op));
}

void defer_ops(void (*fn)()) { registry().op_fns.push_back(fn); }
void defer_variants(Role role, VariantList (*fn)()) { registry().variant_fns.emplace_back(role, fn); }

const std::vector<std::unique_ptr<OpBase>>& all_ops() {
  Registry& r = registry();
  if (!r.ops_done) {
    r.ops_done = true;
    for (auto fn : r.op_fns) fn();
  }
  return r.ops;
}

const OpBase* find_op(const std::string& id) {
  for (const auto& o : all_ops()) {
    if (o->common().id() == id) return o.get();
  }
  return nullptr;
}

const std::vector<Variant>& all_variants() {
  Registry& r = registry();
  if (!r.variants_done) {
    r.variants_done = true;
    for (auto [role, fn] : r.variant_fns) {
      for (Variant v : fn()) {
        if (v.role != Role::Broken) v.role = role;
        const OpBase* op = find_op(v.op);
        if (op == nullptr) {
          std::string known;
          for (const auto& o : all_ops()) known.append(" ").append(o->common().id());
          throw std::logic_error("variant " + v.name + " is for op '" + v.op +
                                 "', which no spec declares (ops:" + known + ")");
        }
        if (op->fn_type() != v.type) {
          throw std::logic_error("variant " + v.name + " has a launcher whose type does not match op " + v.op +
                                 "'s launcher type");
        }
        r.variants.push_back(std::move(v));
      }
    }
  }
  return r.variants;
}

}  // namespace wb
