#include "runtime/options.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace wb::cli {

namespace {

// Edit distance, for "did you mean" (option names are short).
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The known option closest to `given` ("--dev" -> "--device"), or "" when none is close.
std::string nearest_option(const CLI::App& app, const std::string& given) {
  const std::string name = given.substr(0, given.find('='));
  std::string best;
  size_t best_d = std::max<size_t>(2, name.size() / 3) + 1;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) {
      const std::string known = "--" + l;
      const size_t d = known.rfind(name, 0) == 0 && name.size() > 3 ? 1 : distance(name, known);
      if (d < best_d) best_d = d, best = known;
    }
  }
  return best;
}

}  // namespace

void conventions(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.allow_windows_style_options(false);
  app.allow_extras(true);  // unknown arguments are reported by parse(), with a suggestion
  app.get_formatter()->column_width(34);
}

CLI::Validator whole_number(int64_t min, int64_t max) {
  const std::string range =
      max == INT64_MAX ? "at least " + std::to_string(min) : std::to_string(min) + ".." + std::to_string(max);
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        try {
          text = std::to_string(wb::parse_int("", text, min, max));
          return {};
        } catch (const wb::UsageError& e) {
          std::string m = e.what();
          return m.rfind(": ", 0) == 0 ? m.substr(2) : m;  // parse_int's message without its empty name
        }
      },
      range);
}

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(v) || !(v > 0)) {
          return "'" + text + "' is not a positive number";
        }
        return {};
      },
      "> 0");
}

CLI::Validator one_of(std::vector<std::string> choices) {
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  std::string bar;
  for (const auto& c : choices) bar += (bar.empty() ? "" : "|") + c;
  return CLI::Validator(
      [choices, list](std::string& text) -> std::string {
        if (std::find(choices.begin(), choices.end(), text) != choices.end()) return {};
        return "'" + text + "' is not one of " + list;
      },
      bar);
}

CLI::Validator not_empty() {
  return CLI::Validator([](std::string& text) -> std::string { return text.empty() ? "needs a value" : ""; }, "");
}

bool parse(CLI::App& app, int argc, const char* const* argv, std::vector<std::string>* passthrough,
           const std::vector<std::string>& passthrough_prefixes) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return false;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return false;
  } catch (const CLI::ArgumentMismatch& e) {
    // "--out: 1 required TEXT missing": the option was given without its value.
    const std::string m = e.what();
    const std::string name = m.substr(0, m.find(':'));
    throw wb::UsageError(name + " needs a value (" + name + "=VALUE)");
  } catch (const CLI::ConversionError& e) {
    // "Could not convert: --check = abc": a value CLI11 cannot turn into the option's type,
    // which (validated numbers aside) means a value given to a switch.
    const std::string m = e.what(), lead = "Could not convert: ";
    const size_t eq = m.find(" = ");
    if (m.rfind(lead, 0) == 0 && eq != std::string::npos) {
      const std::string name = m.substr(lead.size(), eq - lead.size()), value = m.substr(eq + 3);
      const CLI::Option* o = app.get_option_no_throw(name);
      if (o != nullptr && o->get_expected_max() == 0) {
        throw wb::UsageError(name + " is a switch and takes no value: give " + name + " alone ('" + value +
                             "' was given)");
      }
      throw wb::UsageError(name + ": '" + value + "' is not a value it takes");
    }
    throw wb::UsageError(m);
  } catch (const CLI::ParseError& e) {
    throw wb::UsageError(e.what());  // a validator's message, already "--name: what is wrong"
  }
  for (const std::string& extra : app.remaining()) {
    bool passed = false;
    for (const auto& prefix : passthrough_prefixes) passed = passed || extra.rfind(prefix, 0) == 0;
    if (passed && passthrough != nullptr) {
      passthrough->push_back(extra);
      continue;
    }
    if (extra.rfind("-", 0) == 0) {
      const std::string near = nearest_option(app, extra);
      throw wb::UsageError("unknown option '" + extra + "'" + (near.empty() ? "" : "; did you mean " + near + "?"));
    }
    throw wb::UsageError("unexpected argument '" + extra + "': options start with --, as in --name=value");
  }
  return true;
}

int refuse(const CLI::App& app, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n(%s --help lists the options)\n", app.get_name().c_str(), message.c_str(),
               app.get_name().c_str());
  return 2;
}

std::optional<int> parse_or_exit(CLI::App& app, int argc, const char* const* argv) {
  try {
    if (!parse(app, argc, argv)) return 0;
  } catch (const UsageError& e) {
    return refuse(app, e.what());
  }
  return std::nullopt;
}

}  // namespace wb::cli
