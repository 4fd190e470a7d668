#include "runtime/cli.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdlib>
#include <iostream>

namespace wb {

ArgParser::ArgParser(std::string program, std::string summary)
    : program_(std::move(program)), app_(std::make_unique<CLI::App>(std::move(summary), program_)) {
  app_->allow_extras();  // unknown ones are refused in parse(), passed-through ones kept
  app_->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one given wins
}

ArgParser::~ArgParser() = default;

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
  app_->add_flag("--" + name, *out, help);
}

void ArgParser::add_int(const std::string& name, const std::string& help, int64_t* out, int64_t min, int64_t max) {
  app_->add_option_function<std::string>(
          "--" + name, [=](const std::string& v) { *out = parse_int("--" + name, v, min, max); }, help)
      ->type_name("<int>");
}

void ArgParser::add_string(const std::string& name, const std::string& help, std::string* out) {
  app_->add_option_function<std::string>(
          "--" + name,
          [=](const std::string& v) {
            if (v.empty()) throw UsageError("--" + name + ": needs a value");
            *out = v;
          },
          help)
      ->type_name("<text>");
}

bool ArgParser::parse(int argc, char** argv, std::vector<std::string>* passthrough,
                      const std::vector<std::string>& passthrough_prefixes) {
  if (passthrough) passthrough->push_back(argc > 0 ? argv[0] : program_);
  try {
    app_->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << usage();
    return false;
  } catch (const CLI::ArgumentMismatch& e) {
    const std::string what = e.what();
    throw UsageError(what.substr(0, what.find(':')) + " needs a value");
  } catch (const CLI::ConversionError& e) {
    // A flag given a value it cannot take (--full=maybe; --full=true and --full=0 are fine).
    throw UsageError(std::string(e.what()) + ": a flag takes no value (or true/false)");
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  for (const std::string& arg : app_->remaining()) {
    bool passed = false;
    for (const auto& prefix : passthrough_prefixes) passed = passed || arg.rfind(prefix, 0) == 0;
    if (passed && passthrough) {
      passthrough->push_back(arg);
      continue;
    }
    if (arg.rfind("-", 0) != 0) throw UsageError("unexpected argument '" + arg + "'; options start with --, see --help");
    throw UsageError("unknown option '" + arg + "'; see --help for the options");
  }
  return true;
}

std::string ArgParser::usage() const { return app_->help(); }

}  // namespace wb
