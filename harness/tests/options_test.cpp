// The tools' command lines (runtime/options.h): what is accepted, and what each mistake says.
#include <gtest/gtest.h>

#include "runtime/options.h"

namespace wb::cli {
namespace {

struct Line {
  int64_t device = 0, count = 4;
  double tol = 1e-5;
  std::string dtype = "f32", out;
  bool quick = false;
  bool help = false;

  // Parses `args` (without the program's name); returns "" or the refusal's message.
  std::string parse(std::vector<std::string> args) {
    CLI::App app("a test program", "prog");
    conventions(app);
    app.add_option("--device", device, "which GPU")->transform(whole_number(0, 1024));
    app.add_option("--count", count, "how many")->transform(whole_number(1));
    app.add_option("--tol", tol, "tolerance")->transform(positive_number());
    app.add_option("--dtype", dtype, "f32 or bf16")->transform(one_of({"f32", "bf16"}));
    app.add_option("--out", out, "a file")->transform(not_empty());
    app.add_flag("--quick", quick, "fewer samples");
    args.insert(args.begin(), "prog");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    try {
      help = !wb::cli::parse(app, static_cast<int>(argv.size()), argv.data());
    } catch (const wb::UsageError& e) {
      return e.what();
    }
    return "";
  }
};

TEST(Options, BothSpellingsAndTheLastOfARepeatedOption) {
  Line l;
  EXPECT_EQ(l.parse({"--device=3", "--count", "7", "--dtype=bf16", "--quick", "--out", "x.json"}), "");
  EXPECT_EQ(l.device, 3);
  EXPECT_EQ(l.count, 7);
  EXPECT_EQ(l.dtype, "bf16");
  EXPECT_TRUE(l.quick);
  EXPECT_EQ(l.out, "x.json");
  Line r;
  EXPECT_EQ(r.parse({"--device=1", "--device=2"}), "");
  EXPECT_EQ(r.device, 2) << "a script that appends an option overrides the earlier one";
}

TEST(Options, NumbersAreDecimalAndChecked) {
  Line l;
  EXPECT_EQ(l.parse({"--count=010"}), "");
  EXPECT_EQ(l.count, 10) << "not octal";
  EXPECT_EQ(Line().parse({"--device=abc"}), "--device: 'abc' is not a whole number");
  EXPECT_EQ(Line().parse({"--device=2.5"}), "--device: '2.5' is not a whole number");
  EXPECT_EQ(Line().parse({"--device=-1"}), "--device: -1 is out of range; give a number from 0 to 1024");
  EXPECT_EQ(Line().parse({"--count=0"}), "--count: 0 is out of range; give a number from 1 up");
  EXPECT_EQ(Line().parse({"--tol=x"}), "--tol: 'x' is not a positive number");
  EXPECT_EQ(Line().parse({"--tol=-1e-3"}), "--tol: '-1e-3' is not a positive number");
  Line t;
  EXPECT_EQ(t.parse({"--tol=2e-3"}), "");
  EXPECT_DOUBLE_EQ(t.tol, 2e-3);
}

TEST(Options, ChoicesValuesAndUnknownArguments) {
  EXPECT_EQ(Line().parse({"--dtype=f64"}), "--dtype: 'f64' is not one of f32, bf16");
  EXPECT_EQ(Line().parse({"--out="}), "--out needs a value (--out=VALUE)");
  EXPECT_EQ(Line().parse({"--out"}), "--out needs a value (--out=VALUE)");
  EXPECT_EQ(Line().parse({"--frobnicate"}), "unknown option '--frobnicate'");
  EXPECT_EQ(Line().parse({"--devcie=3"}), "unknown option '--devcie=3'; did you mean --device?");
  EXPECT_EQ(Line().parse({"--dev=3"}), "unknown option '--dev=3'; did you mean --device?");
  EXPECT_EQ(Line().parse({"--quick=abc"}),
            "--quick is a switch and takes no value: give --quick alone ('abc' was given)");
  EXPECT_EQ(Line().parse({"x.json"}), "unexpected argument 'x.json': options start with --, as in --name=value");
}

TEST(Options, HelpIsGeneratedFromTheOptions) {
  Line l;
  testing::internal::CaptureStdout();
  EXPECT_EQ(l.parse({"--help"}), "");
  const std::string help = testing::internal::GetCapturedStdout();
  EXPECT_TRUE(l.help);
  for (const char* want : {"a test program", "--device", "which GPU", "--quick", "f32|bf16"}) {
    EXPECT_NE(help.find(want), std::string::npos) << want << " not in:\n" << help;
  }
}

TEST(Options, ParseOrExitSaysWhetherAToolGoesOn) {
  int64_t device = 0;
  auto run = [&](std::vector<const char*> argv) {
    CLI::App app("a test tool", "prog");
    conventions(app);
    app.add_option("--device", device, "which GPU")->transform(whole_number(0, 1024));
    return parse_or_exit(app, static_cast<int>(argv.size()), argv.data());
  };
  EXPECT_EQ(run({"prog", "--device=3"}), std::nullopt);
  EXPECT_EQ(device, 3);
  testing::internal::CaptureStdout();
  EXPECT_EQ(run({"prog", "--help"}), 0);
  EXPECT_NE(testing::internal::GetCapturedStdout().find("a test tool"), std::string::npos);
  testing::internal::CaptureStderr();
  EXPECT_EQ(run({"prog", "--device=abc"}), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("prog: --device: 'abc' is not a whole number"),
            std::string::npos);
}

}  // namespace
}  // namespace wb::cli
