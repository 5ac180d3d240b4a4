#include <string>
#include <string_view>
#include <unordered_set>

#include "ir/check.h"
#include "ir/graph.h"

namespace switchyard::ir {

namespace {

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t extra = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (extra > text.size() - i - 1) return false;  // truncated sequence
    for (size_t k = 1; k <= extra; ++k) {
      auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((extra == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    i += extra + 1;
  }
  return true;
}

// `text` with every byte outside printable ASCII as \xNN, for messages about bad names.
std::string escaped(std::string_view text) {
  std::string out;
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F) {
      out += ch;
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

// Names reach reports, JSON and saved executables: they must be text.
void check_name(std::string_view name, std::string_view what, const Graph& g) {
  SY_CHECK(valid_utf8(name), InvalidModel, "graph '{}': {} '{}' is not valid UTF-8",
           escaped(g.name()), what, escaped(name));
}

void verify_graph(const Graph& g, std::unordered_set<const Value*>& visible) {
  check_name(g.name(), "the graph name", g);
  for (const auto& v : g.values()) check_name(v->name(), "value name", g);
  for (const auto& n : g.nodes()) {
    check_name(n->name(), "node name", g);
    check_name(n->op_type(), "op type", g);
    check_name(n->domain(), "domain", g);
    for (const Attribute& a : n->attributes()) check_name(a.name, "attribute name", g);
  }
  std::vector<const Value*> added;
  auto make_visible = [&](const Value* v) {
    if (visible.insert(v).second) added.push_back(v);
  };
  for (Value* v : g.inputs()) {
    SY_CHECK(v && v->owner() == &g, InvalidModel, "graph '{}': an input belongs to another graph",
             g.name());
    make_visible(v);
  }
  for (const auto& v : g.values())
    if (v->is_constant()) make_visible(v.get());
  for (const auto& n : g.nodes()) {
    SY_CHECK(n->owner() == &g, InvalidModel, "{}: owned by another graph", n->describe());
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const Value* v = n->input(i);
      if (!v) continue;
      SY_CHECK(visible.count(v), InvalidModel,
               "{}: input {} '{}' is not produced before it is used in graph '{}'", n->describe(),
               i, v->name(), g.name());
      bool listed = false;
      for (auto [user, idx] : v->uses())
        if (user == n.get() && idx == static_cast<int>(i)) listed = true;
      SY_CHECK(listed, InvalidModel, "{}: value '{}' does not list this use", n->describe(),
               v->name());
    }
    for (Graph* sub : n->subgraphs()) {
      SY_CHECK(sub->parent() == &g, InvalidModel, "{}: subgraph '{}' has the wrong parent",
               n->describe(), sub->name());
      verify_graph(*sub, visible);
    }
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      const Value* v = n->output(i);
      SY_CHECK(v && v->producer() == n.get() && v->producer_output() == static_cast<int>(i),
               InvalidModel, "{}: output {} does not point back at its producer", n->describe(), i);
      make_visible(v);
    }
  }
  for (Value* v : g.outputs()) {
    SY_CHECK(v && visible.count(v), InvalidModel, "graph '{}': output '{}' is never produced",
             g.name(), v ? v->name() : std::string("<null>"));
  }
  for (const Value* v : added) visible.erase(v);
}

// Each variable reads through a tensor input typed like its initial value, and an assign is a
// graph output whose type does not contradict it.
void verify_variables(const Graph& g) {
  std::unordered_set<std::string> names, assigned;
  for (const Variable& var : g.variables()) {
    SY_CHECK(g.parent() == nullptr, InvalidModel, "variable '{}': graph '{}' is a subgraph",
             var.name, g.name());
    SY_CHECK(names.insert(var.name).second, InvalidModel, "variable '{}' is declared twice",
             var.name);
    SY_CHECK(var.initial.defined(), InvalidModel, "variable '{}' has no initial value", var.name);
    const Type want = Type::tensor(var.initial.dtype(), make_shape(var.initial.shape()));
    const Value* in = g.find_local_value(var.name);
    SY_CHECK(in && in->is_graph_input(), InvalidModel,
             "variable '{}' is not an input of graph '{}'", var.name, g.name());
    SY_CHECK(in->type().is_tensor() && in->type().dtype == want.dtype && in->type().shape &&
                 *in->type().shape == *want.shape,
             InvalidModel, "variable '{}': its input is {}, its value {}", var.name,
             in->type().to_string(), want.to_string());
    if (var.assigned.empty()) continue;
    SY_CHECK(assigned.insert(var.assigned).second, InvalidModel,
             "variable '{}': output '{}' assigns another variable too", var.name, var.assigned);
    const Value* out = nullptr;
    for (const Value* v : g.outputs())
      if (v->name() == var.assigned) out = v;
    SY_CHECK(out != nullptr, InvalidModel,
             "variable '{}': its assign '{}' is not an output of graph '{}'", var.name,
             var.assigned, g.name());
    const Type& t = out->type();
    bool dtype_ok = !t.is_tensor() || t.dtype == DType::Undefined || t.dtype == want.dtype;
    bool rank_ok = !t.is_tensor() || !t.shape || t.shape->size() == want.shape->size();
    for (size_t i = 0; rank_ok && t.is_tensor() && t.shape && i < t.shape->size(); ++i)
      rank_ok = !(*t.shape)[i].is_static() || (*t.shape)[i] == (*want.shape)[i];
    SY_CHECK(t.is_tensor() || t.is_unknown(), InvalidModel,
             "variable '{}': its assign '{}' is not a tensor ({})", var.name, var.assigned,
             t.to_string());
    SY_CHECK(dtype_ok && rank_ok, InvalidModel, "variable '{}' is {}, but its assign '{}' is {}",
             var.name, want.to_string(), var.assigned, t.to_string());
  }
}

}  // namespace

void verify(const Graph& graph) {
  std::unordered_set<const Value*> visible;
  // Values of enclosing graphs are visible to a subgraph verified on its own.
  for (Graph* p = graph.parent(); p; p = p->parent())
    for (const auto& v : p->values()) visible.insert(v.get());
  verify_graph(graph, visible);
  verify_variables(graph);
}

}  // namespace switchyard::ir
