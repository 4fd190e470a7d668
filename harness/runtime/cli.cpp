#include "runtime/cli.h"

#include <cerrno>
#include <cstdlib>
#include <iostream>

namespace wb {

ArgParser::ArgParser(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

int64_t parse_int(const std::string& what, const std::string& text, int64_t min, int64_t max) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0') {
    throw UsageError(what + ": '" + text + "' is not a whole number");
  }
  if (v < min || v > max) {
    throw UsageError(what + ": " + text + " is out of range; give a number from " + std::to_string(min) +
                     (max == INT64_MAX ? " up" : " to " + std::to_string(max)));
  }
  return v;
}

void ArgParser::add_flag(const std::string& name, const std::string& help, bool* out) {
  options_.push_back({name, help, "flag", [out](const std::string&) { *out = true; }});
}

void ArgParser::add_int(const std::string& name, const std::string& help, int64_t* out, int64_t min,
                        int64_t max) {
  options_.push_back({name, help, "int", [=](const std::string& v) { *out = parse_int("--" + name, v, min, max); }});
}

void ArgParser::add_string(const std::string& name, const std::string& help, std::string* out) {
  options_.push_back({name, help, "text", [=](const std::string& v) {
                        if (v.empty()) throw UsageError("--" + name + ": needs a value");
                        *out = v;
                      }});
}

bool ArgParser::parse(int argc, char** argv, std::vector<std::string>* passthrough,
                      const std::vector<std::string>& passthrough_prefixes) {
  if (passthrough) passthrough->push_back(argc > 0 ? argv[0] : program_);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << usage();
      return false;
    }
    bool passed = false;
    for (const auto& prefix : passthrough_prefixes) {
      if (passthrough && arg.rfind(prefix, 0) == 0) {
        passthrough->push_back(arg);
        passed = true;
      }
    }
    if (passed) continue;
    if (arg.rfind("--", 0) != 0) {
      throw UsageError("unexpected argument '" + arg + "'; options start with --, see --help");
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const Option* opt = nullptr;
    for (const auto& o : options_) {
      if (o.name == name) opt = &o;
    }
    if (opt == nullptr) throw UsageError("unknown option '" + arg + "'; see --help for the options");
    if (opt->kind == "flag") {
      if (eq != std::string::npos) throw UsageError("--" + name + " takes no value");
      opt->set("");
      continue;
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw UsageError("--" + name + " needs a value");
    }
    opt->set(value);
  }
  return true;
}

std::string ArgParser::usage() const {
  // One line per option: the option padded to a fixed column, then its help text.
  auto line = [](std::string left, const std::string& help) {
    if (left.size() < 28) left += std::string(28 - left.size(), ' ');
    return left + " " + help + "\n";
  };
  std::string s = "usage: " + program_ + " [options]\n" + summary_ + "\n\noptions:\n";
  for (const auto& o : options_) {
    s += line("  --" + o.name + (o.kind == "flag" ? "" : "=<" + o.kind + ">"), o.help);
  }
  s += line("  --help", "this text");
  return s;
}

}  // namespace wb
