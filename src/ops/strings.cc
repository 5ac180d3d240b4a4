// Schemas of the strings family (see op_kinds.def): StringNormalizer, TfIdfVectorizer,
// RegexFullMatch, StringConcat, StringSplit.
#include <algorithm>
#include <string>

#include "ir/checked_math.h"
#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

const ir::Shape* shape_of(const ir::Type& t) { return t.has_rank() ? &*t.shape : nullptr; }

void infer_string_normalizer(InferContext& ctx) {
  const ir::Node& n = ctx.node();
  std::string action = n.attr_string("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    ctx.fail("case_change_action '{}' must be NONE, LOWER or UPPER", action);
  int64_t sensitive = n.attr_int("is_case_sensitive", 0);
  if (sensitive != 0 && sensitive != 1) ctx.fail("is_case_sensitive {} must be 0 or 1", sensitive);
  (void)n.attr_string("locale", "");
  const bool has_stopwords = n.has_attribute("stopwords") && !n.attr_strings("stopwords").empty();
  require_dtype(ctx, 0, {ir::DType::String});
  const ir::Type& x = ctx.input_tensor(0);
  const ir::Shape* s = shape_of(x);
  if (!s) {
    ctx.set_output(0, ir::Type::tensor(ir::DType::String));
    return;
  }
  if (s->size() != 1 && s->size() != 2) ctx.fail("input has rank {}, expected 1 or 2", s->size());
  if (s->size() == 2 && (*s)[0].is_static() && (*s)[0].value != 1)
    ctx.fail("a 2-D input must have shape [1, C], got {}", ir::shape_to_string(*s));
  ir::Shape out = *s;
  if (s->size() == 2) out[0] = ir::Dim(1);
  if (has_stopwords) out.back() = ir::Dim();
  ctx.set_output(0, ir::Type::tensor(ir::DType::String, out));
}

void infer_tfidf(InferContext& ctx) {
  const ir::Node& n = ctx.node();
  std::string mode = n.attr_string("mode");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    ctx.fail("mode '{}' must be TF, IDF or TFIDF", mode);
  int64_t min_gram = n.attr_int("min_gram_length");
  int64_t max_gram = n.attr_int("max_gram_length");
  int64_t max_skip = n.attr_int("max_skip_count");
  if (min_gram < 1 || max_gram < min_gram)
    ctx.fail("gram lengths [{}, {}] must satisfy 1 <= min <= max", min_gram, max_gram);
  if (max_skip < 0) ctx.fail("max_skip_count {} must not be negative", max_skip);
  std::vector<int64_t> counts = n.attr_ints("ngram_counts");
  std::vector<int64_t> indexes = n.attr_ints("ngram_indexes");
  const bool has_ints = n.has_attribute("pool_int64s");
  const bool has_strings = n.has_attribute("pool_strings");
  if (has_ints == has_strings) ctx.fail("exactly one of pool_int64s and pool_strings is required");
  const int64_t pool_size = static_cast<int64_t>(has_ints ? n.attr_ints("pool_int64s").size()
                                                          : n.attr_strings("pool_strings").size());
  int64_t grams = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    int64_t start = counts[i];
    int64_t end = i + 1 < counts.size() ? counts[i + 1] : pool_size;
    int64_t len = static_cast<int64_t>(i) + 1;
    if (start < 0 || end < start || end > pool_size || (end - start) % len != 0)
      ctx.fail("ngram_counts[{}] = {} does not split the pool of {} items into {}-grams", i, start,
               pool_size, len);
    grams += (end - start) / len;
  }
  if (static_cast<int64_t>(indexes.size()) != grams)
    ctx.fail("ngram_indexes has {} entries, the pool holds {} n-grams", indexes.size(), grams);
  int64_t columns = 0;
  for (int64_t v : indexes) {
    if (v < 0) ctx.fail("ngram_indexes has negative value {}", v);
    columns = std::max(columns, ir::checked_add(v, 1, "ngram_indexes"));
  }
  if (n.has_attribute("weights") && static_cast<int64_t>(n.attr_floats("weights").size()) != grams)
    ctx.fail("weights has {} entries, expected {}", n.attr_floats("weights").size(), grams);
  ir::DType dt = require_dtype(ctx, 0, {ir::DType::String, ir::DType::Int32, ir::DType::Int64});
  if (dt == ir::DType::String && !has_strings) ctx.fail("string input needs pool_strings");
  if ((dt == ir::DType::Int32 || dt == ir::DType::Int64) && !has_ints)
    ctx.fail("integer input needs pool_int64s");
  const ir::Shape* s = shape_of(ctx.input_tensor(0));
  if (!s) {
    ctx.set_output(0, ir::Type::tensor(ir::DType::Float32));
    return;
  }
  if (s->size() == 1) {
    ctx.set_output(0, ir::Type::tensor(ir::DType::Float32, ir::Shape{columns}));
  } else if (s->size() == 2) {
    ctx.set_output(0, ir::Type::tensor(ir::DType::Float32, ir::Shape{(*s)[0], columns}));
  } else {
    ctx.fail("input has rank {}, expected 1 or 2", s->size());
  }
}

void infer_regex_full_match(InferContext& ctx) {
  (void)ctx.node().attr_string("pattern");
  require_dtype(ctx, 0, {ir::DType::String});
  const ir::Type& x = ctx.input_tensor(0);
  ctx.set_output(0, ir::Type::tensor(ir::DType::Bool, x.shape));
}

void infer_string_concat(InferContext& ctx) {
  require_dtype(ctx, 0, {ir::DType::String});
  require_dtype(ctx, 1, {ir::DType::String});
  const ir::Shape* a = shape_of(ctx.input_tensor(0));
  const ir::Shape* b = shape_of(ctx.input_tensor(1));
  if (a && b) {
    ctx.set_output(0, ir::Type::tensor(ir::DType::String, broadcast_shapes(ctx, {*a, *b})));
  } else {
    ctx.set_output(0, ir::Type::tensor(ir::DType::String));
  }
}

void infer_string_split(InferContext& ctx) {
  (void)ctx.node().attr_string("delimiter", "");
  (void)ctx.node().attr_int("maxsplit", -1);
  require_dtype(ctx, 0, {ir::DType::String});
  const ir::Shape* s = shape_of(ctx.input_tensor(0));
  if (!s) {
    ctx.set_output(0, ir::Type::tensor(ir::DType::String));
    ctx.set_output(1, ir::Type::tensor(ir::DType::Int64));
    return;
  }
  ir::Shape y = *s;
  y.push_back(ir::Dim());
  ctx.set_output(0, ir::Type::tensor(ir::DType::String, y));
  ctx.set_output(1, ir::Type::tensor(ir::DType::Int64, *s));
}

}  // namespace

void register_strings_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::StringNormalizer, 1, 1, 1, 1, infer_string_normalizer});
  r.add(OpSchema{OpKind::TfIdfVectorizer, 1, 1, 1, 1, infer_tfidf});
  r.add(OpSchema{OpKind::RegexFullMatch, 1, 1, 1, 1, infer_regex_full_match});
  r.add(OpSchema{OpKind::StringConcat, 2, 2, 1, 1, infer_string_concat});
  r.add(OpSchema{OpKind::StringSplit, 1, 1, 2, 2, infer_string_split});
}

}  // namespace switchyard::ops
