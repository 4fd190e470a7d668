#include "report/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace wb {

double Json::number() const {
  if (!is_number()) throw std::runtime_error("JSON value is not a number");
  return std::get<double>(v_);
}
const std::string& Json::string() const {
  if (!is_string()) throw std::runtime_error("JSON value is not a string");
  return std::get<std::string>(v_);
}
bool Json::boolean() const {
  if (!std::holds_alternative<bool>(v_)) throw std::runtime_error("JSON value is not a boolean");
  return std::get<bool>(v_);
}
const Json::Array& Json::array_items() const {
  if (!is_array()) throw std::runtime_error("JSON value is not an array");
  return std::get<Array>(v_);
}
const Json::Object& Json::object_items() const {
  if (!is_object()) throw std::runtime_error("JSON value is not an object");
  return std::get<Object>(v_);
}

Json& Json::set(const std::string& key, Json value) {
  if (!is_object()) throw std::runtime_error("JSON set() on a value that is not an object");
  for (auto& [k, v] : std::get<Object>(v_)) {
    if (k == key) return v = std::move(value);
  }
  return std::get<Object>(v_).emplace_back(key, std::move(value)).second;
}

const Json* Json::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, v] : std::get<Object>(v_)) {
    if (k == key) return &v;
  }
  return nullptr;
}

Json& Json::push(Json value) {
  if (!is_array()) throw std::runtime_error("JSON push() on a value that is not an array");
  return std::get<Array>(v_).emplace_back(std::move(value));
}

namespace {

void write_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  Json parse_document() {
    Json v = value();
    skip_ws();
    if (pos_ != t_.size()) fail("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("JSON parse error at offset " + std::to_string(pos_) + ": " + what);
  }
  void skip_ws() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\n' || t_[pos_] == '\t' || t_[pos_] == '\r')) ++pos_;
  }
  bool consume(std::string_view word) {
    if (t_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }
  Json value() {
    skip_ws();
    if (pos_ >= t_.size()) fail("unexpected end of input");
    const char c = t_[pos_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return Json(string());
    if (consume("true")) return Json(true);
    if (consume("false")) return Json(false);
    if (consume("null")) return Json(nullptr);
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail(std::string("unexpected character '") + c + "'");
  }
  Json number() {
    const std::string s(t_.substr(pos_, std::min<size_t>(64, t_.size() - pos_)));
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end == s.c_str()) fail("bad number");
    pos_ += static_cast<size_t>(end - s.c_str());
    return Json(d);
  }
  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= t_.size()) fail("unterminated string");
      const char c = t_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= t_.size()) fail("unterminated escape");
      const char e = t_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (pos_ + 4 > t_.size()) fail("short \\u escape");
          const unsigned code = static_cast<unsigned>(std::strtoul(std::string(t_.substr(pos_, 4)).c_str(), nullptr, 16));
          pos_ += 4;
          if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
          }
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  Json array() {
    ++pos_;
    Json a = Json::array();
    skip_ws();
    if (consume("]")) return a;
    while (true) {
      a.push(value());
      skip_ws();
      if (consume("]")) return a;
      if (!consume(",")) fail("expected ',' or ']'");
    }
  }
  Json object() {
    ++pos_;
    Json o = Json::object();
    skip_ws();
    if (consume("}")) return o;
    while (true) {
      skip_ws();
      if (pos_ >= t_.size() || t_[pos_] != '"') fail("expected a key string");
      std::string key = string();
      skip_ws();
      if (!consume(":")) fail("expected ':'");
      o.set(key, value());
      skip_ws();
      if (consume("}")) return o;
      if (!consume(",")) fail("expected ',' or '}'");
    }
  }

  std::string_view t_;
  size_t pos_ = 0;
};

}  // namespace

void Json::write(std::string& out, int indent, int depth) const {
  const std::string pad = indent > 0 ? "\n" + std::string(static_cast<size_t>(indent * (depth + 1)), ' ') : "";
  const std::string close = indent > 0 ? "\n" + std::string(static_cast<size_t>(indent * depth), ' ') : "";
  if (is_null()) {
    out += "null";
  } else if (std::holds_alternative<bool>(v_)) {
    out += std::get<bool>(v_) ? "true" : "false";
  } else if (is_number()) {
    const double d = std::get<double>(v_);
    if (!std::isfinite(d)) {
      out += "null";  // JSON has no NaN/Inf
    } else {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.10g", d);
      out += buf;
    }
  } else if (is_string()) {
    write_string(out, std::get<std::string>(v_));
  } else if (is_array()) {
    const auto& a = std::get<Array>(v_);
    if (a.empty()) { out += "[]"; return; }
    out += '[';
    for (size_t i = 0; i < a.size(); ++i) {
      out += (i ? "," : "") + pad;
      a[i].write(out, indent, depth + 1);
    }
    out += close + "]";
  } else {
    const auto& o = std::get<Object>(v_);
    if (o.empty()) { out += "{}"; return; }
    out += '{';
    for (size_t i = 0; i < o.size(); ++i) {
      out += (i ? "," : "") + pad;
      write_string(out, o[i].first);
      out += indent > 0 ? ": " : ":";
      o[i].second.write(out, indent, depth + 1);
    }
    out += close + "}";
  }
}

std::string Json::dump(int indent) const {
  std::string out;
  write(out, indent, 0);
  return out;
}

Json Json::parse(std::string_view text) { return Parser(text).parse_document(); }

}  // namespace wb
