// StringNormalizer, TfIdfVectorizer, RegexFullMatch, StringConcat and StringSplit.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "backends/cpu/cpu_kernels.h"
#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

TEST(StringNormalizerKernel, StopwordsAndCase) {
  ir::Tensor x = string_tensor({6}, {"Monday", "tuesday", "MONDAY", "Ünïcode", "straße", "Ωmega"});
  auto run = [&](std::vector<Attribute> attrs, const ir::Tensor& in) {
    return string_values(run_op1(make_case("StringNormalizer", {in}, std::move(attrs))));
  };
  EXPECT_EQ(run({strings_attr("stopwords", {"monday"})}, x),
            (std::vector<std::string>{"tuesday", "Ünïcode", "straße", "Ωmega"}));
  EXPECT_EQ(
      run({strings_attr("stopwords", {"monday"}), Attribute::make_int("is_case_sensitive", 1),
           Attribute::make_string("case_change_action", "UPPER")},
          x),
      (std::vector<std::string>{"MONDAY", "TUESDAY", "MONDAY", "ÜNÏCODE", "STRAßE", "ΩMEGA"}));
  EXPECT_EQ(
      run({Attribute::make_string("case_change_action", "LOWER")}, x),
      (std::vector<std::string>{"monday", "tuesday", "monday", "ünïcode", "straße", "ωmega"}));
  ir::Tensor two_d = string_tensor({1, 3}, {"a", "b", "a"});
  ir::Tensor all_gone =
      run_op1(make_case("StringNormalizer", {two_d}, {strings_attr("stopwords", {"A", "B"})}));
  EXPECT_EQ(all_gone.shape(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(string_values(all_gone), (std::vector<std::string>{""}));
  // Invalid UTF-8 passes through unchanged.
  ir::Tensor bad = string_tensor({1}, {std::string("a\xC3", 2)});
  EXPECT_EQ(run({Attribute::make_string("case_change_action", "UPPER")}, bad),
            (std::vector<std::string>{std::string("A\xC3", 2)}));
  EXPECT_THROW(run({Attribute::make_string("case_change_action", "TITLE")}, x), Error);
  EXPECT_THROW(run({}, string_tensor({2, 2}, {"a", "b", "c", "d"})), Error);
}

TEST(StringNormalizerKernel, UnsupportedLocaleIsRefusedAtPlacement) {
  OpCase oc = make_case("StringNormalizer", {string_tensor({1}, {"x"})},
                        {Attribute::make_string("locale", "tr_TR")});
  auto g = testing::build_op_graph(oc);
  runtime::Support s = cpu::cpu_kernels().supports(*g->nodes()[0]);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("tr_TR"), std::string::npos) << s.reason;
}

// Reference TF counts: every n-gram of the pool occurring with any skip distance.
std::vector<double> tfidf_reference(const std::vector<std::vector<int64_t>>& rows,
                                    const std::vector<std::vector<int64_t>>& pool_grams,
                                    const std::vector<int64_t>& indexes,
                                    const std::vector<float>& weights, const std::string& mode,
                                    int64_t min_n, int64_t max_n, int64_t max_skip,
                                    int64_t columns) {
  std::vector<double> out;
  for (const auto& row : rows) {
    std::vector<double> counts(pool_grams.size(), 0);
    for (size_t g = 0; g < pool_grams.size(); ++g) {
      const auto& gram = pool_grams[g];
      int64_t n = static_cast<int64_t>(gram.size());
      if (n < min_n || n > max_n) continue;
      for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip); ++skip)
        for (size_t s = 0; s < row.size(); ++s) {
          bool match = true;
          for (int64_t k = 0; k < n && match; ++k) {
            size_t at = s + static_cast<size_t>(k * (skip + 1));
            match = at < row.size() && row[at] == gram[k];
          }
          counts[g] += match;
        }
    }
    std::vector<double> r(columns, 0.0);
    for (size_t g = 0; g < counts.size(); ++g) {
      if (counts[g] == 0) continue;
      double w = weights.empty() ? 1 : weights[g];
      r[indexes[g]] += mode == "TF" ? counts[g] : mode == "IDF" ? w : counts[g] * w;
    }
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

TEST(TfIdfVectorizerKernel, RandomRowsAllModes) {
  // Pool: unigrams {1, 2, 3}, bigrams {(1,2), (2,2), (3,1)}, trigrams {(1,1,2)}.
  std::vector<int64_t> pool = {1, 2, 3, 1, 2, 2, 2, 3, 1, 1, 1, 2};
  std::vector<std::vector<int64_t>> grams = {{1}, {2}, {3}, {1, 2}, {2, 2}, {3, 1}, {1, 1, 2}};
  std::vector<int64_t> indexes = {6, 0, 1, 2, 3, 4, 5};
  std::vector<float> weights = {0.5f, 1.5f, 2.0f, 0.25f, 3.0f, 1.0f, 4.0f};
  std::mt19937 rng(3);
  for (std::string mode : {"TF", "IDF", "TFIDF"})
    for (auto [min_n, max_n, skip] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {1, 1, 0}, {1, 2, 0}, {2, 2, 3}, {1, 3, 2}, {3, 3, 1}})
      for (DType dt : {DType::Int32, DType::Int64}) {
        const int64_t rows = 3, len = 11;
        ir::Tensor x(dt, {rows, len});
        std::vector<std::vector<int64_t>> data(rows);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t i = 0; i < len; ++i) {
            int64_t v = static_cast<int64_t>(rng() % 5);
            data[r].push_back(v);
            if (dt == DType::Int32)
              x.data<int32_t>()[r * len + i] = static_cast<int32_t>(v);
            else
              x.data<int64_t>()[r * len + i] = v;
          }
        OpCase oc = make_case(
            "TfIdfVectorizer", {x},
            {Attribute::make_string("mode", mode), Attribute::make_int("min_gram_length", min_n),
             Attribute::make_int("max_gram_length", max_n),
             Attribute::make_int("max_skip_count", skip),
             Attribute::make_ints("ngram_counts", {0, 3, 9}),
             Attribute::make_ints("ngram_indexes", indexes),
             Attribute::make_ints("pool_int64s", pool)});
        if (mode != "TF") oc.attributes.push_back(Attribute::make_floats("weights", weights));
        ir::Tensor y = run_op1(oc);
        ASSERT_EQ(y.shape(), (std::vector<int64_t>{rows, 7}));
        EXPECT_EQ(to_doubles(y), tfidf_reference(data, grams, indexes,
                                                 mode == "TF" ? std::vector<float>{} : weights,
                                                 mode, min_n, max_n, skip, 7))
            << mode << " " << min_n << ".." << max_n << " skip " << skip;
      }
}

TEST(TfIdfVectorizerKernel, StringPoolAndOneDimensional) {
  ir::Tensor x = string_tensor({7}, {"the", "cat", "sat", "on", "the", "cat", "mat"});
  OpCase oc = make_case(
      "TfIdfVectorizer", {x},
      {Attribute::make_string("mode", "TFIDF"), Attribute::make_int("min_gram_length", 1),
       Attribute::make_int("max_gram_length", 2), Attribute::make_int("max_skip_count", 1),
       Attribute::make_ints("ngram_counts", {0, 2}),
       Attribute::make_ints("ngram_indexes", {0, 1, 2, 3}),
       strings_attr("pool_strings", {"cat", "dog", "the", "cat", "cat", "mat"}),
       Attribute::make_floats("weights", {2, 3, 0.5f, 10})});
  ir::Tensor y = run_op1(oc);
  // cat x2 (w 2) = 4; dog 0; (the,cat) twice at skip 0 = 2 * 0.5; (cat,mat) once = 10.
  EXPECT_EQ(to_doubles(y), (std::vector<double>{4, 0, 1, 10}));
  ir::Tensor empty(DType::String, {0});
  oc.inputs = {empty};
  EXPECT_EQ(to_doubles(run_op1(oc)), (std::vector<double>{0, 0, 0, 0}));
  oc.attributes.push_back(Attribute::make_ints("pool_int64s", {1}));
  EXPECT_THROW(run_op(oc), Error);
}

TEST(RegexFullMatchKernel, MatchesWholeStrings) {
  ir::Tensor x =
      string_tensor({2, 2}, {"www.google.com", "www.facebook.com", "google", "x.google.com"});
  ir::Tensor y = run_op1(make_case(
      "RegexFullMatch", {x}, {Attribute::make_string("pattern", R"(www\.[\w.-]+\.\bcom\b)")}));
  EXPECT_EQ(y.dtype(), DType::Bool);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(to_doubles(y), (std::vector<double>{1, 1, 0, 0}));
  // Long inputs do not exhaust the stack.
  ir::Tensor big = string_tensor({1}, {std::string(200000, 'a') + "b"});
  EXPECT_EQ(to_doubles(run_op1(make_case("RegexFullMatch", {big},
                                         {Attribute::make_string("pattern", "(a|c)*b")}))),
            (std::vector<double>{1}));
}

TEST(RegexFullMatchKernel, InvalidPatternIsRefusedAtPlacement) {
  for (std::string pattern : {"(unclosed", R"((a)\1)"}) {
    auto g = testing::build_op_graph(make_case("RegexFullMatch", {string_tensor({1}, {"a"})},
                                               {Attribute::make_string("pattern", pattern)}));
    runtime::Support s = cpu::cpu_kernels().supports(*g->nodes()[0]);
    EXPECT_FALSE(s.ok) << pattern;
    EXPECT_NE(s.reason.find("node 'node'"), std::string::npos) << s.reason;
  }
}

TEST(StringConcatKernel, Broadcasts) {
  ir::Tensor a = string_tensor({2, 1}, {"a", "bb"});
  ir::Tensor b = string_tensor({3}, {"x", "", "zz"});
  ir::Tensor y = run_op1(make_case("StringConcat", {a, b}));
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(string_values(y), (std::vector<std::string>{"ax", "a", "azz", "bbx", "bb", "bbzz"}));
  ir::Tensor s = string_tensor({}, {"!"});
  EXPECT_EQ(string_values(run_op1(make_case("StringConcat", {b, s}))),
            (std::vector<std::string>{"x!", "!", "zz!"}));
  EXPECT_THROW(run_op(make_case("StringConcat", {string_tensor({2}, {"a", "b"}), b})), Error);
}

TEST(StringSplitKernel, WhitespaceDelimiterAndMaxsplit) {
  ir::Tensor x = string_tensor({2, 2}, {"  hello  world ", "", "a,b,,c", "one"});
  auto run = [&](std::vector<Attribute> attrs) {
    OpCase oc = make_case("StringSplit", {x}, std::move(attrs));
    oc.num_outputs = 2;
    return run_op(oc);
  };
  auto out = run({});
  EXPECT_EQ(out[0].tensor.shape(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(string_values(out[0].tensor),
            (std::vector<std::string>{"hello", "world", "", "", "a,b,,c", "", "one", ""}));
  EXPECT_EQ(to_doubles(out[1].tensor), (std::vector<double>{2, 0, 1, 1}));
  out = run({Attribute::make_string("delimiter", ",")});
  EXPECT_EQ(out[0].tensor.shape(), (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(to_doubles(out[1].tensor), (std::vector<double>{1, 1, 4, 1}));
  EXPECT_EQ(string_values(out[0].tensor)[8], "a");
  EXPECT_EQ(string_values(out[0].tensor)[10], "");
  out = run({Attribute::make_string("delimiter", ","), Attribute::make_int("maxsplit", 1)});
  EXPECT_EQ(string_values(out[0].tensor)[5], "b,,c");
  out = run({Attribute::make_int("maxsplit", 1)});
  EXPECT_EQ(string_values(out[0].tensor)[1], "world ");
}

}  // namespace
}  // namespace switchyard::testing
