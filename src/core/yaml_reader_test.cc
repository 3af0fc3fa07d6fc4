#include "core/yaml_reader.h"

#include <gtest/gtest.h>

#include "testing/scratch_dir.h"

namespace shardscope {
namespace {

YamlMap MustMap(const std::string& text) {
  auto node = ParseYaml(text, "t.yaml");
  EXPECT_TRUE(node.ok());
  auto map = YamlMap::From(*node, YamlContext{"t.yaml", "exp1", ""});
  EXPECT_TRUE(map.ok());
  return *map;
}

TEST(YamlReaderTest, ReadsTypedFields) {
  YamlMap m = MustMap("a: 3\nb: 1e5\nc: 100_000\nd: 2.5\ne: hi\nf: true\ng: [1, 2]\n");
  int64_t a = 0, b = 0, c = 0;
  double d = 0;
  std::string e;
  bool f = false;
  std::vector<int64_t> g;
  ASSERT_TRUE(m.Required("a", &a).ok());
  ASSERT_TRUE(m.Required("b", &b).ok());
  ASSERT_TRUE(m.Required("c", &c).ok());
  ASSERT_TRUE(m.Required("d", &d).ok());
  ASSERT_TRUE(m.Required("e", &e).ok());
  ASSERT_TRUE(m.Optional("f", &f).ok());
  ASSERT_TRUE(m.Optional("g", &g).ok());
  EXPECT_EQ(a, 3);
  EXPECT_EQ(b, 100000);
  EXPECT_EQ(c, 100000);
  EXPECT_DOUBLE_EQ(d, 2.5);
  EXPECT_EQ(e, "hi");
  EXPECT_TRUE(f);
  EXPECT_EQ(g, (std::vector<int64_t>{1, 2}));
}

TEST(YamlReaderTest, ErrorsNameFileExperimentAndField) {
  YamlMap m = MustMap("p: {tp_size: eight}\n");
  auto p = m.Map("p");
  ASSERT_TRUE(p.ok());
  int64_t tp = 1;
  Status s = p->Required("tp_size", &tp);
  EXPECT_EQ(s.message(),
            "t.yaml: experiment 'exp1': field 'p.tp_size': expected an integer, got 'eight'");
  s = p->Required("pp_size", &tp);
  EXPECT_EQ(s.message(), "t.yaml: experiment 'exp1': field 'p.pp_size': is required but missing");
}

TEST(YamlReaderTest, RejectsBadValues) {
  YamlMap m = MustMap("n: -4\nx: 2.5\nl: {a: 1}\nbad_key: 1\n");
  int64_t n = 0;
  EXPECT_FALSE(m.RequiredAtLeast("n", 1, &n).ok());
  EXPECT_FALSE(m.Required("x", &n).ok());  // not integral
  std::vector<int64_t> l;
  EXPECT_FALSE(m.Optional("l", &l).ok());
  Status s = m.CheckKeys({"n", "x", "l"});
  EXPECT_NE(s.message().find("field 'bad_key': unknown field"), std::string::npos);
}

TEST(YamlReaderTest, MalformedAndMissingFiles) {
  auto bad = ParseYaml("a: [1, 2\n", "broken.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("broken.yaml: malformed YAML"), std::string::npos);
  auto missing = LoadYamlFile("/nonexistent/x.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/x.yaml"), std::string::npos);
  // issue 17: `--config DIR` read the directory as an empty file.
  testing::ScratchDir scratch;
  auto dir = LoadYamlFile(scratch.path());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().message(), scratch.path() + ": is a directory, not a YAML file");
}

TEST(YamlReaderTest, MergeOverridesRecursively) {
  auto base = ParseYaml("a: 1\nm: {x: 1, y: 2}\n", "b");
  auto over = ParseYaml("m: {y: 3}\nz: 4\n", "o");
  YAML::Node merged = MergeYaml(*base, *over);
  EXPECT_EQ(merged["a"].as<int>(), 1);
  EXPECT_EQ(merged["m"]["x"].as<int>(), 1);
  EXPECT_EQ(merged["m"]["y"].as<int>(), 3);
  EXPECT_EQ(merged["z"].as<int>(), 4);
  EXPECT_EQ((*base)["m"]["y"].as<int>(), 2);  // base untouched
}

// issue 35: a repeated key silently kept the first value.
TEST(YamlReaderTest, DuplicateKeysAreAnErrorNamingBothLines) {
  auto top = ParseYaml("a: 1\nb: 2\na: 3\n", "dup.yaml");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.status().message(), "dup.yaml: line 3: duplicate key 'a' (first on line 1)");
  auto nested =
      ParseYaml("experiments:\n  - name: x\n    batch_size: 1\n    batch_size: 4\n", "dup.yaml");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.status().message(),
            "dup.yaml: line 4: duplicate key 'batch_size' (first on line 3)");
  EXPECT_TRUE(ParseYaml("a: {x: 1}\nb: {x: 2}\n", "fine.yaml").ok());
}

}  // namespace
}  // namespace shardscope
