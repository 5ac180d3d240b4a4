// Symbolic shape inference of the strings family.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/infer_test_util.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

Type tensor(DType dt, ir::Shape s) { return Type::tensor(dt, std::move(s)); }

TEST(StringsSchemas, NormalizerConcatSplitRegex) {
  Type s1 = tensor(DType::String, {Dim("c")});
  EXPECT_EQ(build_node("StringNormalizer", {s1}, 1, {}).out(0), "string[c]");
  EXPECT_EQ(build_node("StringNormalizer", {tensor(DType::String, {1, 5})}, 1,
                       {strings_attr("stopwords", {"a"})})
                .out(0),
            "string[1,?]");
  expect_fails_naming_node([&] {
    build_node("StringNormalizer", {tensor(DType::String, {2, 5})}, 1, {});
  });
  EXPECT_EQ(build_node("StringConcat",
                       {tensor(DType::String, {Dim("a"), 1}), tensor(DType::String, {4})}, 1, {})
                .out(0),
            "string[a,4]");
  auto split = build_node("StringSplit", {tensor(DType::String, {Dim("a"), 2})}, 2, {});
  EXPECT_EQ(split.out(0), "string[a,2,?]");
  EXPECT_EQ(split.out(1), "int64[a,2]");
  EXPECT_EQ(build_node("RegexFullMatch", {tensor(DType::String, {Dim("a")})}, 1,
                       {Attribute::make_string("pattern", "a+")})
                .out(0),
            "bool[a]");
  expect_fails_naming_node([&] {
    build_node("RegexFullMatch", {tensor(DType::Int64, {2})}, 1,
               {Attribute::make_string("pattern", "a")});
  });
}

TEST(StringsSchemas, TfIdfVectorizer) {
  std::vector<Attribute> attrs = {Attribute::make_string("mode", "TF"),
                                  Attribute::make_int("min_gram_length", 1),
                                  Attribute::make_int("max_gram_length", 2),
                                  Attribute::make_int("max_skip_count", 0),
                                  Attribute::make_ints("ngram_counts", {0, 2}),
                                  Attribute::make_ints("ngram_indexes", {3, 0, 1}),
                                  Attribute::make_ints("pool_int64s", {1, 2, 3, 4})};
  EXPECT_EQ(build_node("TfIdfVectorizer", {tensor(DType::Int32, {Dim("b"), 9})}, 1, attrs).out(0),
            "float[b,4]");
  EXPECT_EQ(build_node("TfIdfVectorizer", {tensor(DType::Int64, {9})}, 1, attrs).out(0),
            "float[4]");
  expect_fails_naming_node(
      [&] { build_node("TfIdfVectorizer", {tensor(DType::String, {9})}, 1, attrs); });
  auto bad = attrs;
  bad[5] = Attribute::make_ints("ngram_indexes", {0, 1});
  expect_fails_naming_node(
      [&] { build_node("TfIdfVectorizer", {tensor(DType::Int64, {9})}, 1, bad); });
  bad = attrs;
  bad[4] = Attribute::make_ints("ngram_counts", {0, 3});
  expect_fails_naming_node(
      [&] { build_node("TfIdfVectorizer", {tensor(DType::Int64, {9})}, 1, bad); });
}

}  // namespace
}  // namespace switchyard::testing
