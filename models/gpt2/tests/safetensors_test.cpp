// The safetensors reader and writer: a round trip, and every malformed file refused with a
// message that names the file, the tensor and the problem.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "declare/dtype.h"
#include "safetensors.h"
#include "test_files.h"

namespace gpt2::test {
namespace {

using safetensors::Dtype;
using safetensors::FormatError;

std::vector<std::byte> pattern_bytes(size_t n, int salt) {
  std::vector<std::byte> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<std::byte>(salt + 31 * i + (i >> 8));
  return b;
}

TEST(Safetensors, RoundTripKeepsNamesDtypesShapesBytesAndMetadata) {
  TempDir dir;
  const std::string path = dir.file("round.safetensors");
  std::vector<float> f32 = {1.5f, -2.25f, 3.0e-3f, 7.0f, -0.0f, 1e30f};
  std::vector<uint16_t> bf16 = {wb::float_to_bf16(1.0f).bits, wb::float_to_bf16(-3.5f).bits, 0x7f7f};
  const std::vector<safetensors::OwnedTensor> in = {
      {{"a.weight", Dtype::F32, {2, 3}}, safetensors::to_bytes(f32)},
      {{"b", Dtype::BF16, {3}}, safetensors::to_bytes(bf16)},
      {{"c.f16", Dtype::F16, {5, 1, 1}}, pattern_bytes(10, 3)},
      {{"d.int", Dtype::I32, {2, 2}}, pattern_bytes(16, 5)},
      {{"e.bytes", Dtype::U8, {7}}, pattern_bytes(7, 9)},  // odd size: later tensors unaligned
      {{"f.scalar", Dtype::F64, {}}, pattern_bytes(8, 11)},
      {{"g.empty", Dtype::F32, {0, 4}}, {}},
  };
  safetensors::write(path, in, {{"format", "pt"}, {"note", "quotes \" and \\ survive"}});

  const auto f = safetensors::File::open(path);
  ASSERT_EQ(f.tensors().size(), in.size());
  for (const auto& t : in) {
    const safetensors::TensorView* v = f.find(t.spec.name);
    ASSERT_NE(v, nullptr) << t.spec.name;
    EXPECT_EQ(v->dtype, t.spec.dtype) << t.spec.name;
    EXPECT_EQ(v->shape, t.spec.shape) << t.spec.name;
    ASSERT_EQ(v->data.size(), t.data.size()) << t.spec.name;
    EXPECT_TRUE(std::equal(v->data.begin(), v->data.end(), t.data.begin())) << t.spec.name;
  }
  EXPECT_EQ(f.find("f.scalar")->numel(), 1);
  EXPECT_EQ(f.find("g.empty")->numel(), 0);
  EXPECT_EQ(f.find("missing"), nullptr);
  EXPECT_EQ(f.metadata().at("note"), "quotes \" and \\ survive");
  float back[6];
  std::memcpy(back, f.find("a.weight")->data.data(), sizeof back);
  EXPECT_EQ(back[5], 1e30f);

  // The layout the format prescribes: the length, a header padded so the data starts on an
  // 8-byte boundary, then the tensors back to back in the order written.
  std::ifstream raw(path, std::ios::binary);
  uint64_t header_len = 0;
  raw.read(reinterpret_cast<char*>(&header_len), 8);
  EXPECT_EQ(header_len % 8, 0u);
  EXPECT_EQ(std::filesystem::file_size(path), 8 + header_len + f.data_bytes());
  EXPECT_EQ(f.data_bytes(), 24u + 6 + 10 + 16 + 7 + 8);
  EXPECT_EQ(f.tensors().front().name, "a.weight");  // data order
}

TEST(Safetensors, SpansStayValidWhenTheFileIsMoved) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  safetensors::write(path, {{{"x", Dtype::U8, {5}}, pattern_bytes(5, 1)}});
  auto f = safetensors::File::open(path);
  const std::byte* before = f.find("x")->data.data();
  safetensors::File moved = std::move(f);
  EXPECT_EQ(moved.find("x")->data.data(), before);
  EXPECT_EQ(moved.find("x")->data[4], pattern_bytes(5, 1)[4]);
}

TEST(SafetensorsWriter, RefusesAnExistingFileUnlessOverwrite) {
  TempDir dir;
  const std::string path = dir.file("keep.safetensors");
  safetensors::write(path, {{{"x", Dtype::U8, {3}}, pattern_bytes(3, 1)}});
  const auto size = std::filesystem::file_size(path);
  expect_error<FormatError>(
      [&] {
        safetensors::write(path, {{{"y", Dtype::U8, {9}}, pattern_bytes(9, 2)}});
      },
      {path, "already exists"});
  EXPECT_EQ(std::filesystem::file_size(path), size);  // untouched
  safetensors::write(path, {{{"y", Dtype::U8, {9}}, pattern_bytes(9, 2)}}, {}, true);
  EXPECT_NE(safetensors::File::open(path).find("y"), nullptr);
}

TEST(SafetensorsWriter, RefusesBadTensorsAndLeavesNoFile) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  expect_error<FormatError>(
      [&] {
        safetensors::write(path, {{{"x", Dtype::F32, {3}}, pattern_bytes(8, 1)}});
      },
      {"tensor 'x'", "needs 12 bytes, 8 given"});
  expect_error<FormatError>(
      [&] {
        safetensors::write(
            path, {{{"x", Dtype::U8, {1}}, pattern_bytes(1, 1)}, {{"x", Dtype::U8, {1}}, pattern_bytes(1, 2)}});
      },
      {"tensor 'x'", "given twice"});
  expect_error<std::runtime_error>(
      [&] {
        safetensors::write_streaming(path, {{"x", Dtype::U8, {4}}}, {}, [](size_t, std::span<std::byte>) {
          throw std::runtime_error("generator failed");
        });
      },
      {"generator failed"});
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(std::filesystem::path(path).parent_path())) << "a temporary was left behind";
}

// --- malformed files ------------------------------------------------------------------------

struct Broken {
  const char* name;
  std::string header;                // the JSON header as written
  size_t data_bytes;                 // bytes after it
  std::optional<uint64_t> length;    // a lying header length
  std::vector<std::string> message;  // what the error must say (besides the file's path)
};

void PrintTo(const Broken& b, std::ostream* os) { *os << b.name; }

class Malformed : public ::testing::TestWithParam<Broken> {};

TEST_P(Malformed, IsRefusedNamingFileTensorAndProblem) {
  TempDir dir;
  const std::string path = dir.file("broken.safetensors");
  write_raw(path, GetParam().header, GetParam().data_bytes, GetParam().length);
  std::vector<std::string> parts = GetParam().message;
  parts.push_back(path);
  expect_error<FormatError>([&] { safetensors::File::open(path); }, parts);
}

const std::string kEntry = R"("dtype":"F32","shape":[2],"data_offsets":[0,8])";

// A file of one tensor 'w' whose header entry (dtype, shape, data_offsets) is `entry`, with
// data_bytes of data: the message must name tensor 'w' and say `what`.
Broken bad_w(const char* name, const std::string& entry, size_t data_bytes, std::vector<std::string> what) {
  what.insert(what.begin(), "tensor 'w'");
  return Broken{name, "{\"w\":{" + entry + "}}", data_bytes, {}, std::move(what)};
}

INSTANTIATE_TEST_SUITE_P(
    Safetensors, Malformed,
    ::testing::Values(
        Broken{"HeaderLengthPastTheEnd", "{}", 0, 1000, {"header length 1000 is past the end", "2 bytes follow"}},
        Broken{"MalformedJson", R"({"w": {"dtype": "F32", )", 0, {}, {"not valid JSON", "offset"}},
        Broken{"JsonNotAnObject", "[1, 2]", 0, {}, {"not an object"}},
        bad_w("UnknownDtype", R"("dtype":"F99","shape":[2],"data_offsets":[0,8])", 8, {"unknown dtype 'F99'"}),
        bad_w("ShapeDisagreesWithOffsets", R"("dtype":"F32","shape":[2,3],"data_offsets":[0,20])", 20,
              {"shape [2, 3] of F32 needs 24 bytes", "hold 20"}),
        bad_w("ShapeOverflows", R"("dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8])", 8,
              {"more bytes than the file has"}),
        bad_w("OffsetsPastTheData", R"("dtype":"F32","shape":[4],"data_offsets":[0,16])", 8,
              {"past the end of the data section (8 bytes)"}),
        bad_w("OffsetsBackwards", R"("dtype":"U8","shape":[0],"data_offsets":[8,0])", 8, {"begins after it ends"}),
        Broken{
            "OverlappingTensors",
            R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
            24,
            {},
            {"tensor 'b'", "overlap tensor 'a'"}},
        Broken{
            "HoleBetweenTensors",
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}})",
            24,
            {},
            {"tensor 'b'", "a hole of 8 bytes"}},
        Broken{"BytesAfterTheLastTensor",
               "{\"w\":{" + kEntry + "}}",
               16,
               {},
               {"8 bytes at the end of the data section belong to no tensor"}},
        bad_w("NegativeDimension", R"("dtype":"F32","shape":[-2],"data_offsets":[0,8])", 8, {"shape holds -2"}),
        bad_w("FractionalOffset", R"("dtype":"U8","shape":[7],"data_offsets":[0,7.5])", 8, {"data_offsets holds 7.5"}),
        bad_w("NoDtype", R"("shape":[2],"data_offsets":[0,8])", 8, {"no \"dtype\""}),
        bad_w("NoShape", R"("dtype":"F32","data_offsets":[0,8])", 8, {"no \"shape\""}),
        bad_w("ThreeOffsets", R"("dtype":"F32","shape":[2],"data_offsets":[0,8,8])", 8, {"data_offsets"}),
        Broken{"EntryNotAnObject", R"({"w":[1,2]})", 0, {}, {"tensor 'w'", "not an object"}},
        Broken{"MetadataNotStrings",
               "{\"__metadata__\":{\"n_head\":4},\"w\":{" + kEntry + "}}",
               8,
               {},
               {"__metadata__ 'n_head' is not a string"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Safetensors, TruncatedFilesAreRefused) {
  TempDir dir;
  for (size_t n : {0, 1, 7}) {
    const std::string path = dir.file("short" + std::to_string(n));
    write_bytes(path, std::string(n, '\x05'));
    expect_error<FormatError>([&] { safetensors::File::open(path); },
                              {path, "truncated: " + std::to_string(n) + " bytes"});
  }
  // A good file cut short: its last tensor now reaches past the end.
  const std::string good = dir.file("good.safetensors");
  safetensors::write(good,
                     {{{"a", Dtype::F32, {4}}, pattern_bytes(16, 1)}, {{"b", Dtype::F32, {4}}, pattern_bytes(16, 2)}});
  std::filesystem::resize_file(good, std::filesystem::file_size(good) - 5);
  expect_error<FormatError>([&] { safetensors::File::open(good); },
                            {good, "tensor 'b'", "past the end of the data section"});
}

TEST(Safetensors, HeaderOverTheFormatsLimitIsRefused) {
  TempDir dir;
  const std::string path = dir.file("huge-header.safetensors");
  write_raw(path, "{}", 0, 200'000'000);
  std::filesystem::resize_file(path, 8 + 200'000'000);  // sparse: no disk used
  expect_error<FormatError>([&] { safetensors::File::open(path); }, {path, "over the format's limit of 100 MB"});
}

TEST(Safetensors, MissingFileIsRefused) {
  TempDir dir;
  expect_error<FormatError>([&] { safetensors::File::open(dir.file("nope.safetensors")); },
                            {"nope.safetensors", "cannot open"});
  expect_error<FormatError>([&] { safetensors::File::open(dir.path().string()); }, {"not a regular file"});
}

TEST(Safetensors, TrailingSpacesInTheHeaderAreAllowed) {
  TempDir dir;
  const std::string path = dir.file("padded.safetensors");
  write_raw(path, "{\"w\":{" + kEntry + "}}      ", 8);
  EXPECT_EQ(safetensors::File::open(path).find("w")->shape, std::vector<int64_t>{2});
}

TEST(Safetensors, DtypeNamesAndSizes) {
  EXPECT_EQ(safetensors::dtype_from_name("BF16"), Dtype::BF16);
  EXPECT_EQ(safetensors::dtype_size(Dtype::BF16), 2);
  EXPECT_EQ(safetensors::dtype_size(Dtype::F64), 8);
  EXPECT_EQ(safetensors::dtype_name(Dtype::F8_E4M3), "F8_E4M3");
  EXPECT_FALSE(safetensors::dtype_from_name("f32").has_value());  // the format spells them upper-case
}

}  // namespace
}  // namespace gpt2::test
