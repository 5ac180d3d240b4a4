#include "onnx_mutator.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace switchyard::fuzz {
namespace {

using Rng = std::mt19937_64;

// Values at which size arithmetic, casts and loops break: the dictionary every integer edit draws
// from, half of the time (the other half are small values, which keep models plausible).
constexpr int64_t kEdgeInts[] = {0,
                                 -1,
                                 1,
                                 int64_t{1} << 31,
                                 (int64_t{1} << 31) - 1,
                                 -(int64_t{1} << 31),
                                 int64_t{1} << 40,
                                 int64_t{1} << 62,
                                 -(int64_t{1} << 62),
                                 std::numeric_limits<int64_t>::max(),
                                 std::numeric_limits<int64_t>::min()};

const float kEdgeFloats[] = {0.0f,
                             -0.0f,
                             1.0f,
                             -1.0f,
                             0.5f,
                             1e30f,
                             -1e30f,
                             1e-30f,
                             std::numeric_limits<float>::denorm_min(),
                             std::numeric_limits<float>::max(),
                             std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity()};

const char* const kOpTypes[] = {
#define SY_OP(name, family) #name,
#include "ops/op_kinds.def"
#undef SY_OP
};

const char* const kSymbols[] = {"N", "batch", "seq", "M"};

// Attribute names the importer and the schemas read, with the kind each usually has.
enum class AttrKind { Int, Ints, Float, String };
struct KnownAttribute {
  const char* name;
  AttrKind kind;
};
const KnownAttribute kKnownAttributes[] = {
    {"axis", AttrKind::Int},
    {"axes", AttrKind::Ints},
    {"pads", AttrKind::Ints},
    {"strides", AttrKind::Ints},
    {"dilations", AttrKind::Ints},
    {"kernel_shape", AttrKind::Ints},
    {"group", AttrKind::Int},
    {"blocksize", AttrKind::Int},
    {"perm", AttrKind::Ints},
    {"keepdims", AttrKind::Int},
    {"size", AttrKind::Int},
    {"alpha", AttrKind::Float},
    {"beta", AttrKind::Float},
    {"bias", AttrKind::Float},
    {"epsilon", AttrKind::Float},
    {"mode", AttrKind::String},
    {"auto_pad", AttrKind::String},
    {"ceil_mode", AttrKind::Int},
    {"output_padding", AttrKind::Ints},
    {"output_shape", AttrKind::Ints},
    {"transA", AttrKind::Int},
    {"transB", AttrKind::Int},
    {"split", AttrKind::Ints},
    {"num_outputs", AttrKind::Int},
    {"batch_dims", AttrKind::Int},
    {"sampling_ratio", AttrKind::Int},
    {"output_height", AttrKind::Int},
    {"output_width", AttrKind::Int},
    {"spatial_scale", AttrKind::Float},
    {"to", AttrKind::Int},
    {"k", AttrKind::Int},
    {"largest", AttrKind::Int},
    {"reduction", AttrKind::String},
    {"exclusive", AttrKind::Int},
    {"reverse", AttrKind::Int},
    {"direction", AttrKind::String},
    {"hidden_size", AttrKind::Int},
    {"dtype", AttrKind::Int},
    {"allowzero", AttrKind::Int},
    {"noop_with_empty_axes", AttrKind::Int},
    {"coordinate_transformation_mode", AttrKind::String},
    {"center_point_box", AttrKind::Int},
    {"upper", AttrKind::Int},
    {"storage_order", AttrKind::Int},
    {"p", AttrKind::Int},
    {"lambd", AttrKind::Float},
    {"gamma", AttrKind::Float},
    {"scan_input_axes", AttrKind::Ints},
    {"scan_output_axes", AttrKind::Ints},
    {"num_scan_inputs", AttrKind::Int},
    {"block_size", AttrKind::Int},
    {"stash_type", AttrKind::Int},
    {"seed", AttrKind::Float},
};

const char* const kStrings[] = {
    "",        "NOTSET",        "SAME_UPPER", "SAME_LOWER", "VALID",      "constant",
    "reflect", "edge",          "wrap",       "linear",     "nearest",    "cubic",
    "DCR",     "CRD",           "add",        "mul",        "max",        "forward",
    "reverse", "bidirectional", "avg",        "half_pixel", "asymmetric", "tf_crop_and_resize"};

template <typename T, size_t N>
const T& pick(const T (&items)[N], Rng& rng) {
  return items[rng() % N];
}

template <typename T>
T* pick(const std::vector<T*>& items, Rng& rng) {
  return items.empty() ? nullptr : items[rng() % items.size()];
}

bool coin(Rng& rng, unsigned one_in) { return rng() % one_in == 0; }

int64_t pick_int(Rng& rng) {
  if (coin(rng, 2)) return pick(kEdgeInts, rng);
  return static_cast<int64_t>(rng() % 13) - 4;  // -4 .. 8
}

float pick_float(Rng& rng) {
  if (coin(rng, 2)) return pick(kEdgeFloats, rng);
  return static_cast<float>(static_cast<int>(rng() % 17) - 8) / 4.0f;
}

int pick_dtype(Rng& rng) {
  // Every TensorProto.DataType this protobuf knows, plus values no version defines.
  if (coin(rng, 8)) return coin(rng, 2) ? -1 : 99;
  return static_cast<int>(rng() % 17);
}

// Every graph of the model: the main graph and, recursively, each If/Loop/Scan body.
void collect_graphs(onnx::GraphProto* graph, std::vector<onnx::GraphProto*>& out) {
  out.push_back(graph);
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    for (onnx::AttributeProto& a : *node.mutable_attribute()) {
      if (a.has_g()) collect_graphs(a.mutable_g(), out);
      for (onnx::GraphProto& g : *a.mutable_graphs()) collect_graphs(&g, out);
    }
  }
}

// Every value name the model mentions, for rewiring.
void collect_names(const onnx::GraphProto& graph, std::vector<std::string>& out) {
  for (const auto& v : graph.input()) out.push_back(v.name());
  for (const auto& t : graph.initializer()) out.push_back(t.name());
  for (const auto& node : graph.node()) {
    for (const auto& name : node.output()) out.push_back(name);
    for (const auto& a : node.attribute()) {
      if (a.has_g()) collect_names(a.g(), out);
      for (const auto& g : a.graphs()) collect_names(g, out);
    }
  }
}

onnx::TypeProto_Tensor* tensor_type_of(onnx::TypeProto* type) {
  for (int depth = 0; depth < 8; ++depth) {
    if (type->has_sequence_type()) {
      type = type->mutable_sequence_type()->mutable_elem_type();
    } else if (type->has_optional_type()) {
      type = type->mutable_optional_type()->mutable_elem_type();
    } else {
      break;
    }
  }
  return type->mutable_tensor_type();
}

void set_edge_dim(onnx::TensorShapeProto_Dimension* dim, Rng& rng) {
  unsigned choice = rng() % 8;
  if (choice < 5) {
    dim->set_dim_value(pick_int(rng));
  } else if (choice < 7) {
    dim->set_dim_param(pick(kSymbols, rng));
  } else {
    dim->Clear();  // unknown
  }
}

// A dim of a graph input, output or value_info: an edge value, a symbol, unknown; or a dim
// added or removed, or the whole shape dropped.
bool mutate_dim(onnx::GraphProto& graph, Rng& rng) {
  std::vector<onnx::ValueInfoProto*> infos;
  for (auto& v : *graph.mutable_input()) infos.push_back(&v);
  for (auto& v : *graph.mutable_output()) infos.push_back(&v);
  for (auto& v : *graph.mutable_value_info()) infos.push_back(&v);
  onnx::ValueInfoProto* info = pick(infos, rng);
  if (!info) return false;
  onnx::TypeProto_Tensor* tensor = tensor_type_of(info->mutable_type());
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  switch (rng() % 8) {
    case 0:
      set_edge_dim(shape->add_dim(), rng);
      break;
    case 1:
      if (shape->dim_size() == 0) return false;
      shape->mutable_dim()->RemoveLast();
      break;
    case 2:
      tensor->clear_shape();
      break;
    default:
      if (shape->dim_size() == 0) {
        set_edge_dim(shape->add_dim(), rng);
      } else {
        set_edge_dim(shape->mutable_dim(static_cast<int>(rng() % shape->dim_size())), rng);
      }
  }
  return true;
}

// Dims, dtype or data of a tensor (an initializer or a Constant's value): sizes that disagree
// with the data are what the importer must catch.
void mutate_tensor(onnx::TensorProto& t, Rng& rng) {
  switch (rng() % 8) {
    case 0:
      t.add_dims(pick_int(rng));
      break;
    case 1:
      if (t.dims_size() > 0) {
        t.mutable_dims()->RemoveLast();
        break;
      }
      [[fallthrough]];
    case 2:
      if (t.dims_size() > 0) {
        t.set_dims(static_cast<int>(rng() % t.dims_size()), pick_int(rng));
      } else {
        t.add_dims(pick_int(rng));
      }
      break;
    case 3:
      t.set_data_type(pick_dtype(rng));
      break;
    case 4: {
      // Truncate, extend or replace the raw bytes.
      std::string* raw = t.mutable_raw_data();
      size_t target = coin(rng, 2) && !raw->empty() ? rng() % raw->size() : rng() % 64;
      raw->resize(target, static_cast<char>(rng()));
      break;
    }
    case 5:
      if (t.int64_data_size() > 0 && coin(rng, 2)) {
        t.mutable_int64_data()->RemoveLast();
      } else if (t.float_data_size() > 0 && coin(rng, 2)) {
        t.mutable_float_data()->RemoveLast();
      } else {
        t.add_int64_data(pick_int(rng));
      }
      break;
    case 6:
      if (t.int64_data_size() > 0) {
        t.set_int64_data(static_cast<int>(rng() % t.int64_data_size()), pick_int(rng));
      } else if (t.int32_data_size() > 0) {
        t.set_int32_data(static_cast<int>(rng() % t.int32_data_size()),
                         static_cast<int32_t>(pick_int(rng)));
      } else if (t.float_data_size() > 0) {
        t.set_float_data(static_cast<int>(rng() % t.float_data_size()), pick_float(rng));
      } else if (t.raw_data().size() >= 8) {
        // Overwrite one 8-byte slot of raw data with an edge integer (or a float's bits).
        std::string* raw = t.mutable_raw_data();
        size_t at = (rng() % (raw->size() / 8)) * 8;
        int64_t v = pick_int(rng);
        if (coin(rng, 3)) {
          float f = pick_float(rng);
          std::memcpy(&v, &f, sizeof f);
        }
        std::memcpy(raw->data() + at, &v, sizeof v);
      } else {
        t.add_int32_data(static_cast<int32_t>(pick_int(rng)));
      }
      break;
    default:
      if (coin(rng, 2)) {
        t.set_data_location(onnx::TensorProto::EXTERNAL);
        auto* entry = t.add_external_data();
        entry->set_key(coin(rng, 2) ? "location" : "length");
        entry->set_value(coin(rng, 2) ? "../weights.bin" : std::to_string(pick_int(rng)));
      } else {
        t.add_string_data(std::string(rng() % 8, 'x'));
      }
  }
}

// One integer, float, string or tensor attribute set to an edge value (or an element of a list
// changed, added or removed).
bool mutate_attribute(onnx::GraphProto& graph, Rng& rng) {
  std::vector<onnx::AttributeProto*> attrs;
  for (auto& node : *graph.mutable_node())
    for (auto& a : *node.mutable_attribute())
      if (!a.has_g() && a.graphs_size() == 0) attrs.push_back(&a);
  onnx::AttributeProto* a = pick(attrs, rng);
  if (!a) return false;
  switch (a->type()) {
    case onnx::AttributeProto::INT:
      a->set_i(pick_int(rng));
      break;
    case onnx::AttributeProto::FLOAT:
      a->set_f(pick_float(rng));
      break;
    case onnx::AttributeProto::STRING:
      a->set_s(pick(kStrings, rng));
      break;
    case onnx::AttributeProto::TENSOR:
      mutate_tensor(*a->mutable_t(), rng);
      break;
    case onnx::AttributeProto::INTS:
      if (a->ints_size() == 0 || coin(rng, 4)) {
        a->add_ints(pick_int(rng));
      } else if (coin(rng, 4)) {
        a->mutable_ints()->RemoveLast();
      } else {
        a->set_ints(static_cast<int>(rng() % a->ints_size()), pick_int(rng));
      }
      break;
    case onnx::AttributeProto::FLOATS:
      if (a->floats_size() == 0 || coin(rng, 4)) {
        a->add_floats(pick_float(rng));
      } else if (coin(rng, 4)) {
        a->mutable_floats()->RemoveLast();
      } else {
        a->set_floats(static_cast<int>(rng() % a->floats_size()), pick_float(rng));
      }
      break;
    default:
      // Anything else: the declared type changes under the payload.
      a->set_type(coin(rng, 2) ? onnx::AttributeProto::INT : onnx::AttributeProto::INTS);
  }
  return true;
}

// An attribute the node did not have (or a second one of the same name), from the names the
// schemas read.
bool add_attribute(onnx::GraphProto& graph, Rng& rng) {
  if (graph.node_size() == 0) return false;
  onnx::NodeProto* node = graph.mutable_node(static_cast<int>(rng() % graph.node_size()));
  const KnownAttribute& known = pick(kKnownAttributes, rng);
  onnx::AttributeProto* a = nullptr;
  for (auto& existing : *node->mutable_attribute())
    if (existing.name() == known.name && !coin(rng, 4)) a = &existing;
  if (!a) a = node->add_attribute();
  a->Clear();
  a->set_name(known.name);
  switch (known.kind) {
    case AttrKind::Int:
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(pick_int(rng));
      break;
    case AttrKind::Ints: {
      a->set_type(onnx::AttributeProto::INTS);
      size_t n = rng() % 7;
      for (size_t i = 0; i < n; ++i) a->add_ints(coin(rng, 3) ? pick_int(rng) : 1);
      break;
    }
    case AttrKind::Float:
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(pick_float(rng));
      break;
    case AttrKind::String:
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(pick(kStrings, rng));
      break;
  }
  return true;
}

// The element type of a graph input or an initializer.
bool mutate_dtype(onnx::GraphProto& graph, Rng& rng) {
  size_t choices = static_cast<size_t>(graph.input_size() + graph.initializer_size());
  if (choices == 0) return false;
  size_t i = rng() % choices;
  if (i < static_cast<size_t>(graph.input_size())) {
    tensor_type_of(graph.mutable_input(static_cast<int>(i))->mutable_type())
        ->set_elem_type(pick_dtype(rng));
  } else {
    graph.mutable_initializer(static_cast<int>(i) - graph.input_size())
        ->set_data_type(pick_dtype(rng));
  }
  return true;
}

// A node input pointed at another value of the model (or at nothing, or at a missing name); an
// input added or removed; or a graph output renamed to another value.
bool rewire(onnx::GraphProto& graph, const std::vector<std::string>& names, Rng& rng) {
  auto pick_name = [&]() -> std::string {
    if (names.empty() || coin(rng, 6)) return coin(rng, 2) ? "" : "no_such_value";
    return names[rng() % names.size()];
  };
  if (graph.output_size() > 0 && coin(rng, 8)) {
    graph.mutable_output(static_cast<int>(rng() % graph.output_size()))->set_name(pick_name());
    return true;
  }
  if (graph.node_size() == 0) return false;
  onnx::NodeProto* node = graph.mutable_node(static_cast<int>(rng() % graph.node_size()));
  unsigned choice = rng() % 6;
  if (node->input_size() == 0 || choice == 0) {
    node->add_input(pick_name());
  } else if (choice == 1) {
    node->mutable_input()->RemoveLast();
  } else {
    node->set_input(static_cast<int>(rng() % node->input_size()), pick_name());
  }
  return true;
}

// A node removed, or copied (as is, so its outputs are produced twice, or with renamed outputs).
bool drop_or_duplicate_node(onnx::GraphProto& graph, Rng& rng) {
  if (graph.node_size() == 0) return false;
  int i = static_cast<int>(rng() % graph.node_size());
  if (coin(rng, 2)) {
    graph.mutable_node()->DeleteSubrange(i, 1);
    return true;
  }
  onnx::NodeProto copy = graph.node(i);
  if (!coin(rng, 4))
    for (std::string& out : *copy.mutable_output())
      if (!out.empty()) out += "_dup";
  *graph.add_node() = std::move(copy);
  return true;
}

bool change_op_type(onnx::GraphProto& graph, Rng& rng) {
  if (graph.node_size() == 0) return false;
  graph.mutable_node(static_cast<int>(rng() % graph.node_size()))->set_op_type(pick(kOpTypes, rng));
  return true;
}

bool mutate_initializer(onnx::GraphProto& graph, Rng& rng) {
  std::vector<onnx::TensorProto*> tensors;
  for (auto& t : *graph.mutable_initializer()) tensors.push_back(&t);
  onnx::TensorProto* t = pick(tensors, rng);
  if (!t) return false;
  mutate_tensor(*t, rng);
  return true;
}

// The default-domain opset (the importer's legacy rewrites key on it) or the IR version.
bool mutate_opset(onnx::ModelProto& model, Rng& rng) {
  if (coin(rng, 4)) {
    model.set_ir_version(static_cast<int64_t>(rng() % 12));
    return true;
  }
  for (auto& opset : *model.mutable_opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") {
      opset.set_version(coin(rng, 4) ? pick_int(rng) : static_cast<int64_t>(1 + rng() % 22));
      return true;
    }
  }
  auto* opset = model.add_opset_import();
  opset->set_version(static_cast<int64_t>(1 + rng() % 22));
  return true;
}

// Applies one randomly chosen edit to a random graph of the model (the main graph or a body).
void mutate_model(onnx::ModelProto& model, Rng& rng) {
  std::vector<onnx::GraphProto*> graphs;
  collect_graphs(model.mutable_graph(), graphs);
  std::vector<std::string> names;
  collect_names(model.graph(), names);
  for (int attempt = 0; attempt < 16; ++attempt) {
    onnx::GraphProto& graph = *pick(graphs, rng);
    bool applied = false;
    switch (rng() % 20) {
      case 0:
      case 1:
      case 2:
        applied = mutate_dim(graph, rng);
        break;
      case 3:
      case 4:
      case 5:
      case 6:
        applied = mutate_attribute(graph, rng);
        break;
      case 7:
      case 8:
        applied = add_attribute(graph, rng);
        break;
      case 9:
      case 10:
        applied = mutate_dtype(graph, rng);
        break;
      case 11:
      case 12:
        applied = rewire(graph, names, rng);
        break;
      case 13:
      case 14:
        applied = drop_or_duplicate_node(graph, rng);
        break;
      case 15:
        applied = change_op_type(graph, rng);
        break;
      case 16:
      case 17:
        applied = mutate_initializer(graph, rng);
        break;
      default:
        applied = mutate_opset(model, rng);
        break;
    }
    if (applied) return;
  }
}

size_t write_model(const onnx::ModelProto& model, uint8_t* out, size_t max_size) {
  std::string bytes;
  if (!model.SerializeToString(&bytes) || bytes.size() > max_size) return 0;
  std::memcpy(out, bytes.data(), bytes.size());
  return bytes.size();
}

}  // namespace

size_t mutate_onnx_model(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto model;
  // One in eight mutations stays byte-level even on a parsable model: truncations, varint and
  // tag damage that no structured edit produces.
  if (coin(rng, 8) || !model.ParseFromArray(data, static_cast<int>(size)) || !model.has_graph())
    return LLVMFuzzerMutate(data, size, max_size);
  int edits = 1 + static_cast<int>(rng() % 3 == 0);  // sometimes two edits at once
  for (int i = 0; i < edits; ++i) mutate_model(model, rng);
  size_t written = write_model(model, data, max_size);
  return written != 0 ? written : LLVMFuzzerMutate(data, size, max_size);
}

size_t cross_over_onnx_models(const uint8_t* data1, size_t size1, const uint8_t* data2,
                              size_t size2, uint8_t* out, size_t max_out_size, unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto into, from;
  if (!into.ParseFromArray(data1, static_cast<int>(size1)) || !into.has_graph() ||
      !from.ParseFromArray(data2, static_cast<int>(size2)) || !from.has_graph())
    return 0;
  std::vector<onnx::GraphProto*> sources, targets;
  collect_graphs(from.mutable_graph(), sources);
  collect_graphs(into.mutable_graph(), targets);
  onnx::GraphProto* source = pick(sources, rng);
  onnx::GraphProto* target = pick(targets, rng);
  if (source->node_size() == 0) return 0;
  *target->add_node() = source->node(static_cast<int>(rng() % source->node_size()));
  return write_model(into, out, max_out_size);
}

}  // namespace switchyard::fuzz

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  return switchyard::fuzz::mutate_onnx_model(data, size, max_size, seed);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1,
                                            const uint8_t* data2, size_t size2, uint8_t* out,
                                            size_t max_out_size, unsigned int seed) {
  return switchyard::fuzz::cross_over_onnx_models(data1, size1, data2, size2, out, max_out_size,
                                                  seed);
}
