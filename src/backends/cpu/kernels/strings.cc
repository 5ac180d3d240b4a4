// CPU kernels of the strings family: StringNormalizer, TfIdfVectorizer, RegexFullMatch (std::regex
// ECMAScript; patterns it cannot compile are refused at placement), StringConcat, StringSplit.
#include <algorithm>
#include <map>
#include <regex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "backends/cpu/kernels/common.h"
#include "ir/checked_math.h"

namespace switchyard::cpu {

namespace {

// Case mapping of one code point: ASCII, Latin-1, Greek and Cyrillic (the en_US repertoire).
char32_t map_case(char32_t c, bool upper) {
  auto in = [&](char32_t lo, char32_t hi) { return c >= lo && c <= hi; };
  if (upper) {
    if (in(U'a', U'z')) return c - 32;
    if ((in(0xE0, 0xFE) && c != 0xF7)) return c - 32;
    if (in(0x3B1, 0x3C9) && c != 0x3C2) return c - 32;
    if (in(0x430, 0x44F)) return c - 32;
    if (in(0x450, 0x45F)) return c - 80;
  } else {
    if (in(U'A', U'Z')) return c + 32;
    if ((in(0xC0, 0xDE) && c != 0xD7)) return c + 32;
    if (in(0x391, 0x3A9) && c != 0x3A2) return c + 32;
    if (in(0x410, 0x42F)) return c + 32;
    if (in(0x400, 0x40F)) return c + 80;
  }
  return c;
}

// Changes the case of a UTF-8 string; bytes that are not valid UTF-8 pass through unchanged.
std::string change_case(const std::string& s, bool upper) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80           ? 1
                 : (b >> 5) == 0x6  ? 2
                 : (b >> 4) == 0xE  ? 3
                 : (b >> 3) == 0x1E ? 4
                                    : 0;
    bool valid = len > 0 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k)
      valid = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (!valid || len > 2) {
      // Only 1- and 2-byte sequences hold the mapped ranges; longer ones are copied as they are.
      size_t n = valid ? len : 1;
      out.append(s, i, n);
      i += n;
      continue;
    }
    char32_t c = len == 1 ? b : ((b & 0x1F) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3F);
    if (len == 2 && c < 0x80) {  // overlong encoding: not valid UTF-8, copied as it is
      out.append(s, i, 2);
      i += 2;
      continue;
    }
    char32_t m = map_case(c, upper);
    if (m < 0x80) {
      out.push_back(static_cast<char>(m));
    } else {
      out.push_back(static_cast<char>(0xC0 | (m >> 6)));
      out.push_back(static_cast<char>(0x80 | (m & 0x3F)));
    }
    i += len;
  }
  return out;
}

bool locale_supported(const std::string& locale) {
  return locale.empty() || locale == "en_US" || locale == "en_US.UTF-8" || locale == "en_US.utf8" ||
         locale == "C" || locale == "C.UTF-8";
}

runtime::Support string_normalizer_supported(const ir::Node& node) {
  std::string locale = node.attr_string("locale", "");
  if (!locale_supported(locale))
    return runtime::Support::no(
        fmt::format("{}: locale '{}' is not supported by the CPU kernel (en_US only)",
                    node.describe(), locale));
  return runtime::Support::yes();
}

class StringNormalizerKernel final : public runtime::Kernel {
 public:
  explicit StringNormalizerKernel(const runtime::KernelInit& init) {
    const ir::Node& n = init.node;
    std::string action = n.attr_string("case_change_action", "NONE");
    SY_CHECK(action == "NONE" || action == "LOWER" || action == "UPPER", InvalidModel,
             "{}: case_change_action '{}' must be NONE, LOWER or UPPER", n.describe(), action);
    lower_ = action == "LOWER";
    upper_ = action == "UPPER";
    case_sensitive_ = n.attr_int("is_case_sensitive", 0) != 0;
    if (n.has_attribute("stopwords"))
      for (const auto& w : n.attr_strings("stopwords"))
        stopwords_.insert(case_sensitive_ ? w : change_case(w, false));
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.dtype() != DType::String) ctx.fail("input must be a string tensor");
    if (!(x.rank() == 1 || (x.rank() == 2 && x.dim(0) == 1)))
      ctx.fail("input has shape {}, expected [C] or [1, C]", ir::shape_to_string(x.shape()));
    const std::string* in = x.data<std::string>();
    std::vector<std::string> kept;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const std::string& s = in[i];
      if (!stopwords_.empty() && stopwords_.count(case_sensitive_ ? s : change_case(s, false)) != 0)
        continue;
      kept.push_back(lower_ ? change_case(s, false) : upper_ ? change_case(s, true) : s);
    }
    // An all-filtered input gives one empty string, as ONNX specifies.
    if (kept.empty()) kept.emplace_back();
    const int64_t count = static_cast<int64_t>(kept.size());
    ir::Tensor& y = ctx.allocate_output(
        0, DType::String,
        x.rank() == 1 ? std::vector<int64_t>{count} : std::vector<int64_t>{1, count});
    std::move(kept.begin(), kept.end(), y.data<std::string>());
  }

 private:
  bool lower_ = false, upper_ = false, case_sensitive_ = false;
  std::unordered_set<std::string> stopwords_;
};

class TfIdfVectorizerKernel final : public runtime::Kernel {
 public:
  explicit TfIdfVectorizerKernel(const runtime::KernelInit& init) {
    const ir::Node& n = init.node;
    std::string mode = n.attr_string("mode");
    SY_CHECK(mode == "TF" || mode == "IDF" || mode == "TFIDF", InvalidModel,
             "{}: mode '{}' must be TF, IDF or TFIDF", n.describe(), mode);
    mode_ = mode == "TF" ? Mode::Tf : mode == "IDF" ? Mode::Idf : Mode::TfIdf;
    min_gram_ = n.attr_int("min_gram_length");
    max_gram_ = n.attr_int("max_gram_length");
    max_skip_ = n.attr_int("max_skip_count");
    SY_CHECK(min_gram_ >= 1 && max_gram_ >= min_gram_ && max_skip_ >= 0, InvalidModel,
             "{}: gram lengths [{}, {}] or max_skip_count {} are invalid", n.describe(), min_gram_,
             max_gram_, max_skip_);
    std::vector<int64_t> counts = n.attr_ints("ngram_counts");
    indexes_ = n.attr_ints("ngram_indexes");
    weights_ = n.attr_floats("weights", {});
    strings_ = n.has_attribute("pool_strings");
    // Pool items become integer ids: the values themselves, or the index of each string.
    std::vector<int64_t> pool;
    if (strings_) {
      for (const auto& s : n.attr_strings("pool_strings")) {
        auto it = string_ids_.emplace(s, static_cast<int64_t>(string_ids_.size())).first;
        pool.push_back(it->second);
      }
    } else {
      pool = n.attr_ints("pool_int64s");
    }
    const int64_t pool_size = static_cast<int64_t>(pool.size());
    int64_t id = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      const int64_t len = static_cast<int64_t>(i) + 1;
      const int64_t start = counts[i];
      const int64_t end = i + 1 < counts.size() ? counts[i + 1] : pool_size;
      SY_CHECK(start >= 0 && end >= start && end <= pool_size && (end - start) % len == 0,
               InvalidModel, "{}: ngram_counts[{}] = {} does not split the pool into {}-grams",
               n.describe(), i, start, len);
      for (int64_t p = start; p < end; p += len) {
        std::vector<int64_t> gram(pool.begin() + p, pool.begin() + p + len);
        grams_.emplace(std::move(gram), id++);
      }
      max_pool_gram_ = len;
    }
    SY_CHECK(static_cast<int64_t>(indexes_.size()) == id, InvalidModel,
             "{}: ngram_indexes has {} entries, the pool holds {} n-grams", n.describe(),
             indexes_.size(), id);
    SY_CHECK(weights_.empty() || static_cast<int64_t>(weights_.size()) == id, InvalidModel,
             "{}: weights has {} entries, expected {}", n.describe(), weights_.size(), id);
    for (int64_t v : indexes_) {
      SY_CHECK(v >= 0, InvalidModel, "{}: ngram_indexes has negative value {}", n.describe(), v);
      columns_ = std::max(columns_, ir::checked_add(v, 1, "ngram_indexes"));
    }
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() != 1 && x.rank() != 2) ctx.fail("input has rank {}, expected 1 or 2", x.rank());
    if ((x.dtype() == DType::String) != strings_)
      ctx.fail("input dtype {} does not match the pool's type", ir::dtype_name(x.dtype()));
    const int64_t rows = x.rank() == 1 ? 1 : x.dim(0);
    const int64_t row_len = x.rank() == 1 ? x.dim(0) : x.dim(1);
    std::vector<int64_t> items(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (strings_) {
        auto it = string_ids_.find(x.data<std::string>()[i]);
        items[static_cast<size_t>(i)] = it == string_ids_.end() ? -1 : it->second;
      } else {
        items[static_cast<size_t>(i)] = x.scalar_as_int(i);
      }
    }
    ir::Tensor& y = ctx.allocate_output(
        0, DType::Float32,
        x.rank() == 1 ? std::vector<int64_t>{columns_} : std::vector<int64_t>{rows, columns_});
    float* out = y.data<float>();
    std::fill(out, out + y.numel(), 0.0f);
    // A string absent from the pool (-1) must never match; integer inputs may hold any value.
    const bool unknown_never_matches = strings_;
    parallel_for(rows, 1, ctx.num_threads(), [&](int64_t begin, int64_t end) {
      std::vector<int64_t> gram;
      std::vector<int64_t> counts(indexes_.size());
      for (int64_t r = begin; r < end; ++r) {
        std::fill(counts.begin(), counts.end(), 0);
        const int64_t* row = items.data() + r * row_len;
        for (int64_t len = min_gram_; len <= std::min(max_gram_, max_pool_gram_); ++len) {
          // Unigrams do not depend on the skip distance: count them once. Past a stride of
          // (row_len - 1) / (len - 1) a gram leaves the row, so larger skips (max_skip_count may
          // be 2^40) find nothing and are not tried.
          const int64_t fitting = std::max<int64_t>(row_len - 1, 0) / std::max<int64_t>(len - 1, 1);
          const int64_t skips = len == 1 ? 0 : std::min(max_skip_, fitting - 1);
          for (int64_t skip = 0; skip <= skips; ++skip) {
            const int64_t stride = skip + 1;
            for (int64_t start = 0; start + (len - 1) * stride < row_len; ++start) {
              gram.clear();
              bool unknown = false;
              for (int64_t k = 0; k < len; ++k) {
                gram.push_back(row[start + k * stride]);
                unknown |= gram.back() < 0 && unknown_never_matches;
              }
              if (unknown) continue;
              auto it = grams_.find(gram);
              if (it != grams_.end()) ++counts[static_cast<size_t>(it->second)];
            }
          }
        }
        float* dst = out + r * columns_;
        for (size_t g = 0; g < counts.size(); ++g) {
          if (counts[g] == 0) continue;
          float w = weights_.empty() ? 1.0f : weights_[g];
          float v = mode_ == Mode::Tf    ? static_cast<float>(counts[g])
                    : mode_ == Mode::Idf ? w
                                         : static_cast<float>(counts[g]) * w;
          dst[indexes_[g]] += v;
        }
      }
    });
  }

 private:
  enum class Mode { Tf, Idf, TfIdf };
  Mode mode_ = Mode::Tf;
  int64_t min_gram_ = 1, max_gram_ = 1, max_skip_ = 0, max_pool_gram_ = 0, columns_ = 0;
  bool strings_ = false;
  std::vector<int64_t> indexes_;
  std::vector<float> weights_;
  std::unordered_map<std::string, int64_t> string_ids_;
  std::map<std::vector<int64_t>, int64_t> grams_;
};

// libstdc++'s default std::regex matcher recurses once per input character (long strings overflow
// the stack); its polynomial (Thompson) mode does not, and refuses back-references, which RE2
// does not have either.
constexpr auto kRegexFlags = std::regex::ECMAScript | std::regex_constants::__polynomial;

runtime::Support regex_supported(const ir::Node& node) {
  const ir::Attribute* a = node.find_attribute("pattern");
  if (!a || a->kind != ir::Attribute::Kind::String)
    return runtime::Support::no(fmt::format("{}: pattern attribute is missing", node.describe()));
  try {
    std::regex re(a->s, kRegexFlags);
  } catch (const std::regex_error& e) {
    return runtime::Support::no(fmt::format(
        "{}: pattern '{}' is not a valid ECMAScript regex ({}); the CPU kernel uses std::regex, "
        "not RE2",
        node.describe(), a->s, e.what()));
  }
  return runtime::Support::yes();
}

class RegexFullMatchKernel final : public runtime::Kernel {
 public:
  explicit RegexFullMatchKernel(const runtime::KernelInit& init) {
    std::string pattern = init.node.attr_string("pattern");
    try {
      regex_ = std::regex(pattern, kRegexFlags);
    } catch (const std::regex_error& e) {
      SY_THROW(Unsupported, "{}: pattern '{}' is not a valid ECMAScript regex ({})",
               init.node.describe(), pattern, e.what());
    }
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.dtype() != DType::String) ctx.fail("input must be a string tensor");
    ir::Tensor& y = ctx.allocate_output(0, DType::Bool, x.shape());
    const std::string* in = x.data<std::string>();
    bool* out = y.data<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      try {
        out[i] = std::regex_match(in[i], regex_);
      } catch (const std::regex_error& e) {
        ctx.fail("matching string {} failed: {}", i, e.what());
      }
    }
  }

 private:
  std::regex regex_;
};

class StringConcatKernel final : public runtime::Kernel {
 public:
  explicit StringConcatKernel(const runtime::KernelInit&) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& a = ctx.input(0);
    const ir::Tensor& b = ctx.input(1);
    if (a.dtype() != DType::String || b.dtype() != DType::String)
      ctx.fail("inputs must be string tensors");
    std::vector<int64_t> shape = broadcast_or_fail(ctx, {a.shape(), b.shape()});
    std::vector<int64_t> sa = broadcast_strides(a.shape(), shape);
    std::vector<int64_t> sb = broadcast_strides(b.shape(), shape);
    ir::Tensor& y = ctx.allocate_output(0, DType::String, shape);
    std::string* out = y.data<std::string>();
    const std::string* pa = a.data<std::string>();
    const std::string* pb = b.data<std::string>();
    const int64_t rank = static_cast<int64_t>(shape.size());
    std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
    for (int64_t e = 0; e < y.numel(); ++e) {
      int64_t oa = 0, ob = 0;
      for (int64_t d = 0; d < rank; ++d) {
        oa += idx[static_cast<size_t>(d)] * sa[static_cast<size_t>(d)];
        ob += idx[static_cast<size_t>(d)] * sb[static_cast<size_t>(d)];
      }
      out[e] = pa[oa] + pb[ob];
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++idx[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
        idx[static_cast<size_t>(d)] = 0;
      }
    }
  }
};

class StringSplitKernel final : public runtime::Kernel {
 public:
  explicit StringSplitKernel(const runtime::KernelInit& init)
      : delimiter_(init.node.attr_string("delimiter", "")),
        maxsplit_(init.node.attr_int("maxsplit", -1)) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.dtype() != DType::String) ctx.fail("input must be a string tensor");
    const std::string* in = x.data<std::string>();
    std::vector<std::vector<std::string>> parts(static_cast<size_t>(x.numel()));
    int64_t widest = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      parts[static_cast<size_t>(i)] = split(in[i]);
      widest =
          std::max<int64_t>(widest, static_cast<int64_t>(parts[static_cast<size_t>(i)].size()));
    }
    std::vector<int64_t> y_shape = x.shape();
    y_shape.push_back(widest);
    ir::Tensor& y = ctx.allocate_output(0, DType::String, y_shape);
    std::string* out = y.data<std::string>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto& p = parts[static_cast<size_t>(i)];
      for (size_t k = 0; k < p.size(); ++k)
        out[i * widest + static_cast<int64_t>(k)] = std::move(p[k]);
    }
    if (ctx.num_outputs() > 1) {
      ir::Tensor& z = ctx.allocate_output(1, DType::Int64, x.shape());
      for (int64_t i = 0; i < x.numel(); ++i)
        z.data<int64_t>()[i] = static_cast<int64_t>(parts[static_cast<size_t>(i)].size());
    }
  }

 private:
  static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
  }

  // Python's str.split semantics: runs of whitespace without a delimiter, exact otherwise.
  std::vector<std::string> split(const std::string& s) const {
    std::vector<std::string> parts;
    auto limit_reached = [&] {
      return maxsplit_ >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit_;
    };
    if (delimiter_.empty()) {
      size_t i = 0;
      while (true) {
        while (i < s.size() && is_space(s[i])) ++i;
        if (i == s.size()) break;
        if (limit_reached()) {
          parts.push_back(s.substr(i));
          break;
        }
        size_t j = i;
        while (j < s.size() && !is_space(s[j])) ++j;
        parts.push_back(s.substr(i, j - i));
        i = j;
      }
      return parts;
    }
    size_t pos = 0;
    while (!limit_reached()) {
      size_t found = s.find(delimiter_, pos);
      if (found == std::string::npos) break;
      parts.push_back(s.substr(pos, found - pos));
      pos = found + delimiter_.size();
    }
    parts.push_back(s.substr(pos));
    return parts;
  }

  std::string delimiter_;
  int64_t maxsplit_;
};

}  // namespace

void register_strings_kernels(runtime::KernelRegistry& r) {
  r.add(runtime::KernelDef{ops::OpKind::StringNormalizer,
                           {DType::String},
                           0,
                           string_normalizer_supported,
                           runtime::make_factory<StringNormalizerKernel>()});
  r.add<TfIdfVectorizerKernel>(ops::OpKind::TfIdfVectorizer,
                               {DType::String, DType::Int32, DType::Int64});
  r.add(runtime::KernelDef{ops::OpKind::RegexFullMatch,
                           {DType::String},
                           0,
                           regex_supported,
                           runtime::make_factory<RegexFullMatchKernel>()});
  r.add<StringConcatKernel>(ops::OpKind::StringConcat, {DType::String});
  r.add<StringSplitKernel>(ops::OpKind::StringSplit, {DType::String});
}

}  // namespace switchyard::cpu
