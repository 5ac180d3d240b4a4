// CPU kernels of the elementwise family: Cast and CastLike, between every pair of the runtime's
// dtypes. Numbers print as numpy's str() does (shortest round-trip digits, positional between
// 1e-4 and 1e16, else scientific) and strings parse as decimal or scientific numbers, inf, nan.
#include <cctype>
#include <charconv>
#include <cstring>
#include <string>

#include "backends/cpu/kernels/elementwise_internal.h"

namespace switchyard::cpu {
namespace {

template <typename T>
using C = compute_t<T>;

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

/// double -> float rounding to odd: exact values stay, inexact ones take the odd neighbour, so a
/// second rounding to a narrower format (half, bfloat16) is correctly rounded.
float round_to_odd_float(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || std::isinf(f) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits |= 1u;
  std::memcpy(&f, &bits, sizeof bits);
  return f;
}

template <typename To, typename From>
To cast_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<C<From>>(v) != C<From>(0);
  } else if constexpr (kIsHalf<To>) {
    if constexpr (std::is_same_v<From, float> || kIsHalf<From>) {
      return To(static_cast<float>(v));
    } else {
      return To(round_to_odd_float(static_cast<double>(v)));
    }
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(static_cast<C<From>>(v));
  } else if constexpr (std::is_floating_point_v<C<From>>) {
    return float_to_int<To>(static_cast<double>(static_cast<C<From>>(v)));
  } else {
    return static_cast<To>(v);
  }
}

using CastFn = void (*)(const void*, void*, int64_t, int);

template <typename From, typename To>
void cast_loop(const void* in, void* out, int64_t n, int threads) {
  const From* x = static_cast<const From*>(in);
  To* y = static_cast<To*>(out);
  parallel_for(n, kCheapGrain, threads, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) y[i] = cast_value<To>(x[i]);
  });
}

CastFn select_cast(DType from, DType to, const ir::Node& node) {
  CastFn fn = nullptr;
  if (from == DType::Undefined || to == DType::Undefined || from == DType::String ||
      to == DType::String)
    return fn;
  dispatch(AllPodTypes{}, from, node, [&](auto from_tag) {
    dispatch(AllPodTypes{}, to, node,
             [&](auto to_tag) { fn = &cast_loop<decltype(from_tag), decltype(to_tag)>; });
  });
  return fn;
}

// ---- numbers to strings ----

/// Shortest round-trip digits in scientific form ("1.2345e-05", "3e+00").
template <typename T>
std::string shortest_scientific(T v) {
  char buf[64];
  if constexpr (kIsHalf<T>) {
    const float f = static_cast<float>(v);
    for (int precision = 0; precision < 9; ++precision) {
      auto r = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific, precision);
      std::string s(buf, r.ptr);
      float back = 0;
      std::from_chars(s.data(), s.data() + s.size(), back);
      if (T(back).bits == v.bits) return s;
    }
    auto r = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
    return std::string(buf, r.ptr);
  } else {
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    return std::string(buf, r.ptr);
  }
}

template <typename T>
std::string format_float(T v) {
  const double d = static_cast<double>(static_cast<C<T>>(v));
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  std::string sci = shortest_scientific(v);
  const double magnitude = std::fabs(d);
  if (magnitude < 1e-4 || magnitude >= 1e16) {
    // numpy drops a ".0" mantissa but keeps to_chars' two-digit exponent ("1e-05").
    return sci;
  }
  std::string sign = sci[0] == '-' ? "-" : "";
  size_t start = sign.size();
  size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t i = start; i < e_pos; ++i)
    if (sci[i] != '.') digits += sci[i];
  int exponent = std::stoi(sci.substr(e_pos + 1));
  std::string out = sign;
  if (exponent >= 0) {
    size_t int_len = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_len) {
      out += digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  } else {
    out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  }
  return out;
}

template <typename T>
std::string format_value(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "True" : "False";
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else {
    return format_float(v);
  }
}

// ---- strings to numbers ----

std::string_view trim(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

/// Strips one leading '+', which from_chars does not accept.
std::string_view strip_plus(std::string_view s) {
  if (s.size() > 1 && s[0] == '+' && s[1] != '-' && s[1] != '+') return s.substr(1);
  return s;
}

template <typename F>
bool parse_float(std::string_view text, F& value) {
  std::string_view s = strip_plus(trim(text));
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), value, std::chars_format::general);
  if (r.ptr != s.data() + s.size()) return false;
  if (r.ec == std::errc::result_out_of_range) {
    // Too large overflows to infinity and too small underflows to zero, as strtod does.
    size_t e = s.find_first_of("eE");
    bool tiny = e != std::string_view::npos && e + 1 < s.size() && s[e + 1] == '-';
    bool negative = s[0] == '-';
    value = tiny ? F(0) : std::numeric_limits<F>::infinity();
    if (negative) value = -value;
    return true;
  }
  return r.ec == std::errc();
}

template <typename T>
T parse_value(const runtime::KernelContext& ctx, const std::string& text, int64_t index) {
  auto bad = [&](const char* why) {
    ctx.fail("string '{}' at index {} cannot be cast to {}: {}", text, index,
             ir::dtype_name(ir::DTypeOf<T>::value), why);
  };
  if constexpr (std::is_same_v<T, bool>) {
    std::string lower(trim(text));
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == "true") return true;
    if (lower == "false") return false;
    double d = 0;
    if (!parse_float(text, d)) bad("not a number or true/false");
    return d != 0;
  } else if constexpr (std::is_integral_v<T>) {
    std::string_view s = strip_plus(trim(text));
    using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    W w = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), w);
    if (s.empty() || r.ptr != s.data() + s.size() || r.ec == std::errc::invalid_argument)
      bad("not an integer");
    if (r.ec == std::errc::result_out_of_range ||
        w < static_cast<W>(std::numeric_limits<T>::min()) ||
        w > static_cast<W>(std::numeric_limits<T>::max()))
      bad("out of range");
    return static_cast<T>(w);
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    T v = 0;
    if (!parse_float(text, v)) bad("not a number");
    return v;
  } else {
    double d = 0;
    if (!parse_float(text, d)) bad("not a number");
    return T(round_to_odd_float(d));
  }
}

/// Cast (target from the `to` attribute) and CastLike (target = input 1's dtype).
class CastKernel final : public runtime::Kernel {
 public:
  explicit CastKernel(const runtime::KernelInit& init)
      : cast_like_(ops::kind_of(init.node) == ops::OpKind::CastLike),
        from_(declared(init.node, 0)),
        to_(cast_like_ ? declared(init.node, 1) : static_cast<DType>(init.node.attr_int("to"))),
        fn_(select_cast(from_, to_, init.node)) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const DType to = cast_like_ ? ctx.input(1).dtype() : to_;
    ir::Tensor& y = ctx.allocate_output(0, to, x.shape());
    const int64_t n = x.numel();
    if (x.dtype() == DType::String && to == DType::String) {
      for (int64_t i = 0; i < n; ++i) y.data<std::string>()[i] = x.data<std::string>()[i];
    } else if (x.dtype() == DType::String) {
      dispatch(AllPodTypes{}, to, ctx.node(), [&](auto tag) {
        using T = decltype(tag);
        const std::string* src = x.data<std::string>();
        T* dst = y.data<T>();
        for (int64_t i = 0; i < n; ++i) dst[i] = parse_value<T>(ctx, src[i], i);
      });
    } else if (to == DType::String) {
      dispatch(AllPodTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
        using T = decltype(tag);
        const T* src = x.data<T>();
        std::string* dst = y.data<std::string>();
        for (int64_t i = 0; i < n; ++i) dst[i] = format_value(src[i]);
      });
    } else {
      CastFn fn =
          x.dtype() == from_ && to == to_ && fn_ ? fn_ : select_cast(x.dtype(), to, ctx.node());
      fn(x.raw(), y.raw(), n, ctx.num_threads());
    }
  }

 private:
  static DType declared(const ir::Node& node, size_t i) {
    const ir::Value* v = node.input(i);
    return v && v->type().is_tensor() ? v->type().dtype : DType::Undefined;
  }

  bool cast_like_;
  DType from_;
  DType to_;
  CastFn fn_;
};

}  // namespace

void register_elementwise_cast_kernels(runtime::KernelRegistry& r) {
  std::vector<DType> all = dtypes_of(AllPodTypes{});
  all.push_back(DType::String);
  r.add<CastKernel>(ops::OpKind::Cast, all);
  r.add<CastKernel>(ops::OpKind::CastLike, all);
}

}  // namespace switchyard::cpu
