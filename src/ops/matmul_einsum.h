// Einsum equations: parsing "ij,jk->ik" (with "..." and implicit outputs) into integer labels
// per operand dim, shared by Einsum's schema and its kernels.
#pragma once

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

namespace switchyard::ops {

/// Labels per dim: letters are 0..51 (a-z, A-Z); the dims an ellipsis stands for are
/// kEllipsisLabel + j, right-aligned over the widest ellipsis of all operands.
struct EinsumSpec {
  static constexpr int kEllipsisLabel = 52;
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
};

namespace einsum_detail {
inline int letter_label(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// Splits a term into letter labels with the ellipsis position (-1 when none).
inline bool split_term(const std::string& term, std::vector<int>& letters, int& ellipsis_at,
                       std::string& error) {
  ellipsis_at = -1;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '.') {
      if (ellipsis_at >= 0 || term.compare(i, 3, "...") != 0) {
        error = "'...' must appear at most once per term and be written as three dots";
        return false;
      }
      ellipsis_at = static_cast<int>(letters.size());
      i += 2;
      continue;
    }
    int l = letter_label(term[i]);
    if (l < 0) {
      error = std::string("character '") + term[i] + "' is not a letter";
      return false;
    }
    letters.push_back(l);
  }
  return true;
}
}  // namespace einsum_detail

/// Parses `equation` for operands of the given ranks. Returns nullopt and sets `error` when the
/// equation is malformed or does not match the ranks.
inline std::optional<EinsumSpec> parse_einsum(const std::string& equation,
                                              const std::vector<int64_t>& ranks,
                                              std::string& error) {
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  size_t arrow = eq.find("->");
  std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    terms.push_back(
        lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size()) {
    error = "the equation has " + std::to_string(terms.size()) + " operand terms but there are " +
            std::to_string(ranks.size()) + " inputs";
    return std::nullopt;
  }
  EinsumSpec spec;
  int64_t ellipsis_rank = 0;
  std::vector<std::vector<int>> letters(terms.size());
  std::vector<int> ellipsis_at(terms.size());
  for (size_t t = 0; t < terms.size(); ++t) {
    if (!einsum_detail::split_term(terms[t], letters[t], ellipsis_at[t], error))
      return std::nullopt;
    int64_t n = static_cast<int64_t>(letters[t].size());
    if (ellipsis_at[t] < 0 ? ranks[t] != n : ranks[t] < n) {
      error = "term '" + terms[t] + "' does not match input " + std::to_string(t) + " of rank " +
              std::to_string(ranks[t]);
      return std::nullopt;
    }
    if (ellipsis_at[t] >= 0) ellipsis_rank = std::max(ellipsis_rank, ranks[t] - n);
  }
  std::vector<int> counts(EinsumSpec::kEllipsisLabel, 0);
  for (size_t t = 0; t < terms.size(); ++t) {
    std::vector<int> labels;
    int64_t e = ranks[t] - static_cast<int64_t>(letters[t].size());
    for (size_t i = 0; i <= letters[t].size(); ++i) {
      if (static_cast<int>(i) == ellipsis_at[t])
        for (int64_t j = 0; j < e; ++j)
          labels.push_back(EinsumSpec::kEllipsisLabel + static_cast<int>(ellipsis_rank - e + j));
      if (i < letters[t].size()) labels.push_back(letters[t][i]);
    }
    for (int l : letters[t]) ++counts[static_cast<size_t>(l)];
    spec.inputs.push_back(std::move(labels));
  }
  if (arrow == std::string::npos) {
    for (int64_t j = 0; j < ellipsis_rank; ++j)
      spec.output.push_back(EinsumSpec::kEllipsisLabel + static_cast<int>(j));
    for (int l = 0; l < EinsumSpec::kEllipsisLabel; ++l)
      if (counts[static_cast<size_t>(l)] == 1) spec.output.push_back(l);
    // Implicit output letters are in alphabetical order (a-z before A-Z as numpy sorts ASCII:
    // upper case first).
    std::stable_sort(spec.output.begin() + ellipsis_rank, spec.output.end(), [](int a, int b) {
      auto key = [](int l) { return l >= 26 ? l - 26 : l + 26; };
      return key(a) < key(b);
    });
    return spec;
  }
  std::vector<int> out_letters;
  int out_ellipsis = -1;
  if (!einsum_detail::split_term(eq.substr(arrow + 2), out_letters, out_ellipsis, error))
    return std::nullopt;
  for (size_t i = 0; i <= out_letters.size(); ++i) {
    if (static_cast<int>(i) == out_ellipsis)
      for (int64_t j = 0; j < ellipsis_rank; ++j)
        spec.output.push_back(EinsumSpec::kEllipsisLabel + static_cast<int>(j));
    if (i == out_letters.size()) break;
    int l = out_letters[i];
    if (counts[static_cast<size_t>(l)] == 0) {
      error = "output label '" + eq.substr(arrow + 2) + "' uses a letter no input has";
      return std::nullopt;
    }
    if (std::count(out_letters.begin(), out_letters.end(), l) > 1) {
      error = "the output repeats a letter";
      return std::nullopt;
    }
    spec.output.push_back(l);
  }
  if (out_ellipsis < 0 && ellipsis_rank > 0) {
    error = "inputs use '...' but the output does not";
    return std::nullopt;
  }
  return spec;
}

}  // namespace switchyard::ops
