// Tunable parameters, declared by a chapter, swept by one autotuner for every chapter.
//
// A chapter whose kernel has knobs (tile sizes, threads per row, CTAs per row ...) declares
// a Space: the parameters and the values to try (every combination, or a list of points
// when only some are compiled), why a point cannot run a shape, and a heuristic for GPUs
// that were never tuned. Its launcher asks wb::tune::choose(space, shape)
// (harness/tune/choose.cpp) for a Config; the autotuner (harness/tune/tune_main.cpp, built
// as chNN_tune) sweeps every point on the space's shapes (by default the op's benchmark
// shapes), checks each with the op's spec, times it, and writes the winners per GPU into
// configs/<space>.json, the one config format of the book:
//
//   { "about": "...",
//     "gpus": { "<GPU name> sm_<major><minor>": {
//         "gpu": "...", "compute_capability": "9.0", "sms": 132, "date": "...", "commit": "...",
//         "space": "ch07_softmax_topk", "variant": "v4_split_row",
//         "winners": [ { "shape": {"B": 64, "V": 128256}, "config": {"threads": 256, ...},
//                        "name": "threads256_splits8_vec2", "us": 14.2, "reference_us": 900.1 } ],
//         "overall": { "config": {...}, "name": "...", "geomean_us": 20.1, "reference_geomean_us": 950.3 },
//         "sweep": [ { "shape": "B64_V128256_k50", "config": "...", "us": 15.0 } or "skipped": why,
//                    plus what the space records of a point ("registers": 128, ...) ] } } }
//
// "overall" is the point with the best geometric mean over the tuned shapes (among those
// right and timed on all of them).
//
// Plain C++ (no CUDA), host-tested in harness/tests/tune_test.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "declare/spec.h"

namespace wb::tune {

using Json = nlohmann::ordered_json;  // configs keep their keys in the order written

struct Param {
  std::string name;             // "threads"
  std::vector<int64_t> values;  // what the sweep tries, in order
  std::string meaning;          // "threads per CTA"
};

// One point of a space: a value for every parameter, in the space's order.
class Config {
 public:
  Config() = default;
  explicit Config(std::vector<std::pair<std::string, int64_t>> values) : values_(std::move(values)) {}
  int64_t operator[](std::string_view name) const;  // throws std::out_of_range naming it
  const std::vector<std::pair<std::string, int64_t>>& values() const { return values_; }
  std::string name() const;  // "threads256_splits8_vec2"
  Json to_json() const;
  friend bool operator==(const Config&, const Config&) = default;

 private:
  std::vector<std::pair<std::string, int64_t>> values_;
};

struct Facts {
  int sms = 0;  // multiprocessors of the GPU the heuristic plans for
  int cc = 0;   // compute capability, major*10+minor
};

struct Space {
  std::string name;  // "ch07_softmax_topk": also the config file's name (configs/<name>.json)
  std::vector<Param> params;
  // The points to sweep when they are not every combination of the parameters' values (a
  // kernel whose configurations are compiled one by one): each one a value per parameter.
  std::vector<Config> points;
  std::vector<std::string> dims;  // the shape's dimensions winners are matched on ("B", "V")
  // Why `c` cannot run `shape` (shared memory, a knob that needs another), or nullopt.
  std::function<std::optional<std::string>(const Config& c, const Shape& shape)> problem;
  // The config for a GPU without a tuned entry, or a shape far from every tuned one.
  std::function<Config(const Shape& shape, const Facts& gpu)> heuristic;
  // For a shape far from every tuned one: the entry's overall winner, when the file has one,
  // before the heuristic (a space whose best point depends little on the shape).
  bool prefer_overall = false;
  // Optional: a point's name for people ("128x128x8_w64x32_t8x8_n256"); else Config::name().
  std::function<std::string(const Config& c)> label;
  // Optional: the shapes the autotuner sweeps (default: the op's benchmark shapes).
  std::vector<Shape> shapes;
  // Optional: awkward shapes (primes, misaligned rows) every point must pass the op's check
  // on before it is timed.
  std::vector<Shape> check_shapes;
  // Optional: what the autotuner records of a point besides its times (registers, spills).
  std::function<std::vector<std::pair<std::string, int64_t>>(const Config& c)> facts;

  std::vector<Config> all() const;             // `points`, or every combination, the first parameter slowest
  std::string name_of(const Config& c) const;  // label(c), or c.name()
  // `j` as a config of this space: every parameter present, a listed value (one of `points`
  // when the space lists them). Throws std::runtime_error naming the problem.
  Config from_json(const Json& j) const;
};

struct Winner {
  Shape shape;
  Config config;
  double us = 0;
};

// "NVIDIA H100 80GB HBM3 sm_90": a GPU's key in a config file.
std::string gpu_key(const std::string& gpu_name, int major, int minor);
// $WORKBOOK_CONFIG_DIR/<space>.json when that variable is set and not empty (pass
// getenv's result), else <default_dir>/<space>.json.
std::string config_path(const char* env_dir, const std::string& default_dir, const std::string& space);

// What a config file holds for one GPU.
struct Tuned {
  bool has_entry = false;         // the file has an entry for the GPU
  std::vector<Winner> winners;    // per shape
  std::optional<Config> overall;  // the best geometric mean over the tuned shapes
};

// The entry stored for `key` in a config file's text (`path` names it in messages). Throws
// std::runtime_error naming the file and the problem when the text is not a config document
// of this space; an absent key gives an empty Tuned.
Tuned read_tuned(std::string_view text, const std::string& path, const std::string& key, const Space& space);
// Its winners alone.
std::vector<Winner> read_winners(std::string_view text, const std::string& path, const std::string& key,
                                 const Space& space);

// How far apart two shapes are on the space's dims: the sum of |ln(a/b)|.
double distance(const Space& space, const Shape& a, const Shape& b);
// The winner nearest `shape`, if it is within a factor of `within` in total.
std::optional<Config> nearest(const Space& space, const std::vector<Winner>& winners, const Shape& shape,
                              double within = 4.0);

// Which point is the overall winner: `us[p][s]` is point p's time on shape s (0: not timed,
// wrong or skipped). The lowest geometric mean among the points timed on every shape, or
// nullopt when no point was.
std::optional<size_t> overall_index(const std::vector<std::vector<double>>& us);

// The shapes of --shapes=LIST: items separated by commas, each the space's dims in order
// joined by 'x' ("4096x1024x8192" for M, N, K), or one number for all of them (a cube: "1024").
// Every other dimension and parameter is taken from `like`. Throws wb::UsageError naming
// --shapes and the bad item.
std::vector<Shape> parse_shapes(const std::string& text, const Space& space, const Shape& like);

// The config document with `entry` stored under gpus[key]; every other GPU's entry is kept.
// `existing` may be null (no file yet). Throws if it is not a config document.
Json merge_entry(const Json* existing, const std::string& about, const std::string& key, const Json& entry);

}  // namespace wb::tune
