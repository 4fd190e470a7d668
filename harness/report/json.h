// A small JSON value, writer and parser: enough for results files and caches, with no
// third-party dependency.
#pragma once
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace wb {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;  // keeps insertion order

  Json() : v_(nullptr) {}
  Json(std::nullptr_t) : v_(nullptr) {}
  Json(bool b) : v_(b) {}
  Json(double d) : v_(d) {}
  Json(int i) : v_(static_cast<double>(i)) {}
  Json(int64_t i) : v_(static_cast<double>(i)) {}
  Json(uint64_t i) : v_(static_cast<double>(i)) {}
  Json(const char* s) : v_(std::string(s)) {}
  Json(std::string s) : v_(std::move(s)) {}
  Json(Array a) : v_(std::move(a)) {}
  Json(Object o) : v_(std::move(o)) {}

  static Json object() { return Json(Object{}); }
  static Json array() { return Json(Array{}); }

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(v_); }
  bool is_number() const { return std::holds_alternative<double>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_object() const { return std::holds_alternative<Object>(v_); }
  bool is_array() const { return std::holds_alternative<Array>(v_); }

  double number() const;               // throws std::runtime_error on the wrong type
  const std::string& string() const;
  bool boolean() const;
  const Array& array_items() const;
  const Object& object_items() const;

  // Object access: set() replaces or appends; find() returns nullptr when absent.
  Json& set(const std::string& key, Json value);
  const Json* find(std::string_view key) const;
  // Array append.
  Json& push(Json value);

  std::string dump(int indent = 2) const;
  static Json parse(std::string_view text);  // throws std::runtime_error with the position

 private:
  void write(std::string& out, int indent, int depth) const;
  std::variant<std::nullptr_t, bool, double, std::string, Array, Object> v_;
};

}  // namespace wb
