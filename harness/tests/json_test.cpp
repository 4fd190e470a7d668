#include <gtest/gtest.h>

#include "report/json.h"

namespace wb {
namespace {

TEST(Json, RoundTripKeepsValuesAndOrder) {
  Json doc = Json::object();
  doc.set("name", "NVIDIA H100 \"SXM\"\n");
  doc.set("gbps", 3012.5);
  doc.set("ok", true);
  doc.set("none", nullptr);
  Json list = Json::array();
  list.push(1);
  list.push("two");
  doc.set("list", list);
  const Json back = Json::parse(doc.dump());
  EXPECT_EQ(back.find("name")->string(), "NVIDIA H100 \"SXM\"\n");
  EXPECT_DOUBLE_EQ(back.find("gbps")->number(), 3012.5);
  EXPECT_TRUE(back.find("ok")->boolean());
  EXPECT_TRUE(back.find("none")->is_null());
  EXPECT_EQ(back.find("list")->array_items().at(1).string(), "two");
  EXPECT_EQ(back.object_items().front().first, "name");
  EXPECT_EQ(back.dump(), doc.dump());
}

TEST(Json, NonFiniteNumbersBecomeNull) {
  Json j = Json::object();
  j.set("x", std::numeric_limits<double>::infinity());
  EXPECT_EQ(j.dump(0), "{\"x\":null}");
}

TEST(Json, MalformedInputSaysWhere) {
  for (const char* bad : {"{", "{\"a\" 1}", "[1,]", "\"open", "tru", "{} x"}) {
    try {
      Json::parse(bad);
      ADD_FAILURE() << "parsed: " << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("offset"), std::string::npos) << e.what();
    }
  }
}

TEST(Json, SetReplacesExistingKey) {
  Json j = Json::object();
  j.set("k", 1);
  j.set("k", 2);
  EXPECT_EQ(j.object_items().size(), 1u);
  EXPECT_EQ(j.find("k")->number(), 2);
  EXPECT_EQ(j.find("missing"), nullptr);
}

}  // namespace
}  // namespace wb
