// Symbolic shape inference of the strings family.
#include <gtest/gtest.h>

#include <functional>

#include "ir/check.h"
#include "ops/schema.h"

namespace switchyard {
namespace {

using ir::Attribute;
using ir::Dim;
using ir::DType;
using ir::Type;

struct Built {
  std::unique_ptr<ir::Graph> graph;
  ir::Node* node;
  std::string out(size_t i) const { return node->output(i)->type().to_string(); }
};

// One node whose inputs are graph inputs of the given types, or constants where `constants`
// holds a tensor; an Unknown type marks an omitted input.
Built build(const std::string& op, const std::vector<Type>& inputs, int num_outputs,
            const std::vector<Attribute>& attrs,
            const std::vector<std::optional<ir::Tensor>>& constants = {}) {
  Built b{std::make_unique<ir::Graph>("g"), nullptr};
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (i < constants.size() && constants[i]) {
      ins.push_back(b.graph->add_constant(name, *constants[i]));
    } else {
      ins.push_back(inputs[i].is_unknown() ? nullptr : b.graph->add_input(name, inputs[i]));
    }
  }
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back("out" + std::to_string(i));
  b.node = b.graph->add_node(op, "n", ins, outs);
  for (const auto& a : attrs) b.node->set_attribute(a);
  ops::infer_types(*b.graph);
  return b;
}

Type tensor(DType dt, ir::Shape s) { return Type::tensor(dt, std::move(s)); }

void expect_fails_naming_node(const std::function<void()>& f) {
  try {
    f();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'n'"), std::string::npos) << e.what();
  }
}

Attribute strings_attr(const std::string& name, std::vector<std::string> v) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::Strings;
  a.strings = std::move(v);
  return a;
}

TEST(StringsSchemas, NormalizerConcatSplitRegex) {
  Type s1 = tensor(DType::String, {Dim("c")});
  EXPECT_EQ(build("StringNormalizer", {s1}, 1, {}).out(0), "string[c]");
  EXPECT_EQ(build("StringNormalizer", {tensor(DType::String, {1, 5})}, 1,
                  {strings_attr("stopwords", {"a"})})
                .out(0),
            "string[1,?]");
  expect_fails_naming_node([&] {
    build("StringNormalizer", {tensor(DType::String, {2, 5})}, 1, {});
  });
  EXPECT_EQ(build("StringConcat",
                  {tensor(DType::String, {Dim("a"), 1}), tensor(DType::String, {4})}, 1, {})
                .out(0),
            "string[a,4]");
  auto split = build("StringSplit", {tensor(DType::String, {Dim("a"), 2})}, 2, {});
  EXPECT_EQ(split.out(0), "string[a,2,?]");
  EXPECT_EQ(split.out(1), "int64[a,2]");
  EXPECT_EQ(build("RegexFullMatch", {tensor(DType::String, {Dim("a")})}, 1,
                  {Attribute::make_string("pattern", "a+")})
                .out(0),
            "bool[a]");
  expect_fails_naming_node([&] {
    build("RegexFullMatch", {tensor(DType::Int64, {2})}, 1,
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
  EXPECT_EQ(build("TfIdfVectorizer", {tensor(DType::Int32, {Dim("b"), 9})}, 1, attrs).out(0),
            "float[b,4]");
  EXPECT_EQ(build("TfIdfVectorizer", {tensor(DType::Int64, {9})}, 1, attrs).out(0), "float[4]");
  expect_fails_naming_node(
      [&] { build("TfIdfVectorizer", {tensor(DType::String, {9})}, 1, attrs); });
  auto bad = attrs;
  bad[5] = Attribute::make_ints("ngram_indexes", {0, 1});
  expect_fails_naming_node([&] { build("TfIdfVectorizer", {tensor(DType::Int64, {9})}, 1, bad); });
  bad = attrs;
  bad[4] = Attribute::make_ints("ngram_counts", {0, 3});
  expect_fails_naming_node([&] { build("TfIdfVectorizer", {tensor(DType::Int64, {9})}, 1, bad); });
}

}  // namespace
}  // namespace switchyard
