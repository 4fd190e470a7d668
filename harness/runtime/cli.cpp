#include "runtime/cli.h"

#include <CLI/CLI.hpp>

#include "runtime/options.h"

#include <cerrno>
#include <cstdlib>
#include <iostream>

namespace wb {

ArgParser::ArgParser(std::string program, std::string summary)
    : program_(std::move(program)), app_(std::make_unique<CLI::App>(std::move(summary), program_)) {
  cli::conventions(*app_);  // the last of a repeated option wins; unknown ones refused in parse()
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
  return cli::parse(*app_, argc, argv, passthrough, passthrough_prefixes);
}

std::string ArgParser::usage() const { return app_->help(); }

}  // namespace wb
