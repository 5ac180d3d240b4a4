// The importer on hand-built models: tensors of every dtype, types, subgraphs, naming, and
// every way a malformed file must fail.

#include <onnx/onnx-data_pb.h>

#include <cmath>
#include <random>

#include "onnx_test_util.h"

namespace switchyard::onnx_test {
namespace {

using onnx::TensorProto;

// One initializer per dtype: its ONNX type, our dtype, and three values to store.
struct DTypeCase {
  TensorProto::DataType proto;
  DType dtype;
  std::vector<double> values;
};

const std::vector<DTypeCase>& dtype_cases() {
  static const std::vector<DTypeCase> cases = {
      {TensorProto::FLOAT, DType::Float32, {1.5, -2.25, 1e-3}},
      {TensorProto::DOUBLE, DType::Float64, {3.141592653589793, -1e-300, 7}},
      {TensorProto::FLOAT16, DType::Float16, {0.5, -1.75, 1024}},
      {TensorProto::BFLOAT16, DType::BFloat16, {2.5, -0.125, 384}},
      {TensorProto::INT8, DType::Int8, {-128, 7, 127}},
      {TensorProto::INT16, DType::Int16, {-32768, -9, 32767}},
      {TensorProto::INT32, DType::Int32, {-2147483648.0, 11, 2147483647}},
      {TensorProto::INT64, DType::Int64, {-9007199254740993.0, -5, 9007199254740992.0}},
      {TensorProto::UINT8, DType::UInt8, {0, 200, 255}},
      {TensorProto::UINT16, DType::UInt16, {1, 40000, 65535}},
      {TensorProto::UINT32, DType::UInt32, {3, 3000000000.0, 4294967295.0}},
      {TensorProto::UINT64, DType::UInt64, {5, 1e19, 123}},
      {TensorProto::BOOL, DType::Bool, {1, 0, 1}},
  };
  return cases;
}

// The little-endian bytes of `values` as `dtype`.
std::string encode_raw(DType dtype, const std::vector<double>& values) {
  std::string out;
  auto put = [&](auto v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  for (double v : values) {
    switch (dtype) {
      case DType::Float32:
        put(static_cast<float>(v));
        break;
      case DType::Float64:
        put(v);
        break;
      case DType::Float16:
        put(Float16(static_cast<float>(v)).bits);
        break;
      case DType::BFloat16:
        put(BFloat16(static_cast<float>(v)).bits);
        break;
      case DType::Int8:
        put(static_cast<int8_t>(v));
        break;
      case DType::Int16:
        put(static_cast<int16_t>(v));
        break;
      case DType::Int32:
        put(static_cast<int32_t>(v));
        break;
      case DType::Int64:
        put(static_cast<int64_t>(v));
        break;
      case DType::UInt8:
        put(static_cast<uint8_t>(v));
        break;
      case DType::UInt16:
        put(static_cast<uint16_t>(v));
        break;
      case DType::UInt32:
        put(static_cast<uint32_t>(v));
        break;
      case DType::UInt64:
        put(static_cast<uint64_t>(v));
        break;
      case DType::Bool:
        put(static_cast<uint8_t>(v != 0));
        break;
      default:
        throw std::runtime_error("unexpected dtype");
    }
  }
  return out;
}

// Stores `values` in the typed field that ONNX uses for `dtype`.
void encode_typed(TensorProto* t, DType dtype, const std::vector<double>& values) {
  for (double v : values) {
    switch (dtype) {
      case DType::Float32:
        t->add_float_data(static_cast<float>(v));
        break;
      case DType::Float64:
        t->add_double_data(v);
        break;
      case DType::Float16:
        t->add_int32_data(Float16(static_cast<float>(v)).bits);
        break;
      case DType::BFloat16:
        t->add_int32_data(BFloat16(static_cast<float>(v)).bits);
        break;
      case DType::Int64:
        t->add_int64_data(static_cast<int64_t>(v));
        break;
      case DType::UInt32:
        t->add_uint64_data(static_cast<uint32_t>(v));
        break;
      case DType::UInt64:
        t->add_uint64_data(static_cast<uint64_t>(v));
        break;
      case DType::UInt8:
        t->add_int32_data(static_cast<uint8_t>(v));
        break;
      case DType::UInt16:
        t->add_int32_data(static_cast<uint16_t>(v));
        break;
      default:
        t->add_int32_data(static_cast<int32_t>(v));
        break;
    }
  }
}

// A model whose only content is an initializer `w` that is also the graph output.
onnx::ModelProto model_with_initializer(const std::function<void(TensorProto*)>& fill) {
  onnx::ModelProto m = make_model(17);
  TensorProto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  fill(t);
  add_untyped_output(m.mutable_graph(), "w");
  return m;
}

void check_values(const ir::Tensor& t, const DTypeCase& c) {
  ASSERT_EQ(t.dtype(), c.dtype);
  ASSERT_EQ(t.shape(), (std::vector<int64_t>{3}));
  // Raw bytes equal what an exact encoding produces, so every bit survived.
  std::string expected = encode_raw(c.dtype, c.values);
  ASSERT_EQ(t.nbytes(), expected.size());
  EXPECT_EQ(std::memcmp(t.raw(), expected.data(), expected.size()), 0)
      << "dtype " << dtype_name(c.dtype);
  if (c.dtype == DType::Float32 || c.dtype == DType::Float64 || c.dtype == DType::Float16 ||
      c.dtype == DType::BFloat16 || c.dtype == DType::Bool || c.dtype == DType::Int8) {
    for (int64_t i = 0; i < 3; ++i)
      EXPECT_NEAR(t.scalar_as_double(i), c.values[static_cast<size_t>(i)],
                  std::abs(c.values[static_cast<size_t>(i)]) * 1e-6);
  }
}

TEST(OnnxImport, RawInitializersOfEveryDtype) {
  for (const DTypeCase& c : dtype_cases()) {
    auto m = model_with_initializer([&](TensorProto* t) {
      t->set_data_type(c.proto);
      t->add_dims(3);
      t->set_raw_data(encode_raw(c.dtype, c.values));
    });
    auto g = import_proto(m);
    const ir::Value* w = g->find_value("w");
    ASSERT_TRUE(w && w->is_constant());
    check_values(w->constant(), c);
    EXPECT_EQ(w->type().to_string(), std::string(dtype_name(c.dtype)) + "[3]");
  }
}

TEST(OnnxImport, TypedFieldInitializersOfEveryDtype) {
  for (const DTypeCase& c : dtype_cases()) {
    auto m = model_with_initializer([&](TensorProto* t) {
      t->set_data_type(c.proto);
      t->add_dims(3);
      encode_typed(t, c.dtype, c.values);
    });
    auto g = import_proto(m);
    check_values(g->find_value("w")->constant(), c);
  }
}

TEST(OnnxImport, StringAndScalarAndEmptyInitializers) {
  auto m = model_with_initializer([](TensorProto* t) {
    t->set_data_type(TensorProto::STRING);
    t->add_dims(2);
    t->add_string_data("alpha");
    t->add_string_data(std::string("b\0c", 3));
  });
  auto g = import_proto(m);
  const ir::Tensor& s = g->find_value("w")->constant();
  ASSERT_EQ(s.dtype(), DType::String);
  EXPECT_EQ(s.data<std::string>()[0], "alpha");
  EXPECT_EQ(s.data<std::string>()[1], std::string("b\0c", 3));

  auto scalar = import_proto(model_with_initializer([](TensorProto* t) {
    t->set_data_type(TensorProto::INT64);
    t->add_int64_data(-42);
  }));
  EXPECT_EQ(scalar->find_value("w")->constant().rank(), 0);
  EXPECT_EQ(scalar->find_value("w")->constant().scalar_as_int(), -42);

  auto empty = import_proto(model_with_initializer([](TensorProto* t) {
    t->set_data_type(TensorProto::FLOAT);
    t->add_dims(0);
    t->add_dims(5);
  }));
  EXPECT_EQ(empty->find_value("w")->constant().numel(), 0);
}

TEST(OnnxImport, RefusesRawDataOfTheWrongSize) {
  auto m = model_with_initializer([](TensorProto* t) {
    t->set_data_type(TensorProto::FLOAT);
    t->add_dims(2);
    t->add_dims(2);
    t->set_raw_data(std::string(12, '\1'));
  });
  expect_error([&] { import_proto(m); }, ErrorCode::InvalidModel,
               {"model 'test.onnx'", "initializer 'w'", "raw_data has 12 bytes, expected 16"});
}

TEST(OnnxImport, RefusesTypedFieldsOfTheWrongCount) {
  auto m = model_with_initializer([](TensorProto* t) {
    t->set_data_type(TensorProto::INT8);
    t->add_dims(4);
    t->add_int32_data(1);
  });
  expect_error([&] { import_proto(m); }, ErrorCode::InvalidModel,
               {"model 'test.onnx'", "initializer 'w'", "int32_data has 1 values, expected 4"});
}

TEST(OnnxImport, RefusesDimsWhoseProductOverflowsAndNegativeDims) {
  auto huge = model_with_initializer([](TensorProto* t) {
    t->set_data_type(TensorProto::FLOAT);
    t->add_dims(int64_t{1} << 40);
    t->add_dims(int64_t{1} << 40);
    t->set_raw_data(std::string(16, '\0'));
  });
  expect_error([&] { import_proto(huge); }, ErrorCode::InvalidModel,
               {"model 'test.onnx'", "initializer 'w'", "more elements than int64"});
  // No overflow in the count, but far more bytes than the data holds: refused before
  // anything is allocated.
  auto big = model_with_initializer([](TensorProto* t) {
    t->set_data_type(TensorProto::DOUBLE);
    t->add_dims(int64_t{1} << 55);
    t->set_raw_data(std::string(8, '\0'));
  });
  expect_error([&] { import_proto(big); }, ErrorCode::InvalidModel, {"initializer 'w'"});
  auto negative = model_with_initializer([](TensorProto* t) {
    t->set_data_type(TensorProto::FLOAT);
    t->add_dims(-3);
  });
  expect_error([&] { import_proto(negative); }, ErrorCode::InvalidModel,
               {"initializer 'w'", "negative dimension -3"});
}

TEST(OnnxImport, RefusesUnknownAndComplexDataTypes) {
  auto unknown = model_with_initializer([](TensorProto* t) {
    t->set_data_type(17);  // float8e4m3fn in ONNX 1.14
    t->add_dims(1);
    t->set_raw_data("x");
  });
  expect_error([&] { import_proto(unknown); }, ErrorCode::Unsupported,
               {"initializer 'w'", "data type 17"});
  auto complex = model_with_initializer([](TensorProto* t) {
    t->set_data_type(TensorProto::COMPLEX64);
    t->add_dims(1);
    t->add_float_data(1);
    t->add_float_data(2);
  });
  expect_error([&] { import_proto(complex); }, ErrorCode::Unsupported,
               {"initializer 'w'", "complex64"});
}

TEST(OnnxImport, InputsTypesAndModelInfo) {
  onnx::ModelProto m = make_model(13);
  auto* ml = m.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  auto* g = m.mutable_graph();
  add_input(g, "x", TensorProto::FLOAT, {"batch", "3", "?"});
  auto* seq = g->add_input();
  seq->set_name("s");
  set_tensor_type(seq->mutable_type()->mutable_sequence_type()->mutable_elem_type(),
                  TensorProto::INT64, {"n"});
  auto* opt = g->add_input();
  opt->set_name("o");
  set_tensor_type(opt->mutable_type()->mutable_optional_type()->mutable_elem_type(),
                  TensorProto::FLOAT16, {});
  // IR<4 style: an initializer also listed among the inputs stays a constant.
  add_float_initializer(g, "bias", {3}, {0.25f, -0.5f, 2.0f});
  add_input(g, "bias", TensorProto::FLOAT, {"3"});
  add_node(g, "Relu", {"x"}, {"r"});
  add_node(g, "Add", {"r", "bias"}, {"y"});
  auto* vi = g->add_value_info();
  vi->set_name("r");
  set_tensor_type(vi->mutable_type(), TensorProto::FLOAT, {"batch", "3", "w"});
  add_output(g, "y", TensorProto::FLOAT, {"batch", "3", "w"});

  onnx_import::ModelInfo info;
  auto graph = import_proto(m, &info);
  EXPECT_EQ(info.ir_version, 8);
  EXPECT_EQ(info.opsets.at(""), 13);
  EXPECT_EQ(info.opsets.at("ai.onnx.ml"), 3);
  EXPECT_EQ(info.producer, "switchyard-test 1.0");
  EXPECT_EQ(graph->name(), "test_graph");
  ASSERT_EQ(graph->inputs().size(), 3u);
  EXPECT_EQ(graph->inputs()[0]->type().to_string(), "float[batch,3,?]");
  const ir::Shape& shape = *graph->inputs()[0]->type().shape;
  EXPECT_TRUE(shape[0].is_symbolic());
  EXPECT_EQ(shape[0].symbol, "batch");
  EXPECT_EQ(shape[1].value, 3);
  EXPECT_TRUE(shape[2].is_unknown());
  EXPECT_TRUE(graph->inputs()[1]->type().is_sequence());
  EXPECT_EQ(graph->inputs()[1]->type().element->to_string(), "int64[n]");
  EXPECT_TRUE(graph->inputs()[2]->type().is_optional());
  EXPECT_EQ(graph->inputs()[2]->type().element->dtype, DType::Float16);
  EXPECT_TRUE(graph->find_value("bias")->is_constant());
  EXPECT_FALSE(graph->find_value("bias")->is_graph_input());
  EXPECT_EQ(graph->find_value("r")->type().to_string(), "float[batch,3,w]");
  ASSERT_EQ(graph->outputs().size(), 1u);
  EXPECT_EQ(graph->outputs()[0]->name(), "y");
  EXPECT_EQ(graph->outputs()[0]->type().to_string(), "float[batch,3,w]");
}

TEST(OnnxImport, NamesUnnamedAndDuplicateNodes) {
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", TensorProto::FLOAT, {"4"});
  add_node(g, "Relu", {"x"}, {"a"});
  add_node(g, "Neg", {"a"}, {"b"}, "n");
  add_node(g, "Neg", {"b"}, {"c"}, "n");
  add_node(g, "Relu", {"c"}, {"d"});
  add_node(g, "Abs", {"d"}, {"e"}, "Relu_0");
  add_output(g, "e", TensorProto::FLOAT, {"4"});
  auto graph = import_proto(m);
  std::vector<std::string> names;
  for (const auto& n : graph->nodes()) names.push_back(n->name());
  EXPECT_EQ(names, (std::vector<std::string>{"Relu_0", "n", "n_1", "Relu_3", "Relu_0_1"}));
}

// then: Add(x, x) reading the outer x; else: Neg(z) where z is produced after the If in file
// order.
onnx::ModelProto model_with_if() {
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "cond", TensorProto::BOOL, {});
  add_input(g, "x", TensorProto::FLOAT, {"2"});
  onnx::GraphProto then_branch;
  then_branch.set_name("then");
  add_node(&then_branch, "Add", {"x", "x"}, {"t"});
  add_untyped_output(&then_branch, "t");
  onnx::GraphProto else_branch;
  else_branch.set_name("else");
  add_node(&else_branch, "Neg", {"z"}, {"e"});
  add_untyped_output(&else_branch, "e");
  auto* if_node = add_node(g, "If", {"cond"}, {"y"});
  set_graph(if_node, "then_branch", then_branch);
  set_graph(if_node, "else_branch", else_branch);
  add_node(g, "Abs", {"x"}, {"z"}, "abs");
  add_output(g, "y", TensorProto::FLOAT, {"2"});
  return m;
}

TEST(OnnxImport, SubgraphReadsOuterValues) {
  auto graph = import_proto(model_with_if());
  // The If reads z through its else branch, so it is sorted after the Abs that makes z.
  ASSERT_EQ(graph->nodes().size(), 2u);
  EXPECT_EQ(graph->nodes()[0]->name(), "abs");
  const ir::Node& if_node = node_named(*graph, "If_0");
  ir::Graph& then_g = if_node.attr_graph("then_branch");
  ir::Graph& else_g = if_node.attr_graph("else_branch");
  EXPECT_EQ(then_g.parent(), graph.get());
  EXPECT_EQ(else_g.parent(), graph.get());
  EXPECT_EQ(then_g.name(), "If_0/then_branch");
  const ir::Node& add = node_named(then_g, "If_0/Add_0");
  EXPECT_EQ(add.input(0), graph->find_value("x"));
  EXPECT_EQ(add.input(1), graph->find_value("x"));
  // Both branches start with node 0: the second one is made unique.
  const ir::Node& neg = node_named(else_g, "If_0/Neg_0");
  EXPECT_EQ(neg.input(0), graph->find_value("z"));
  auto outer = then_g.outer_scope_values();
  ASSERT_EQ(outer.size(), 1u);
  EXPECT_EQ(outer[0]->name(), "x");
}

TEST(OnnxImport, RefusesValuesNobodyProduces) {
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", TensorProto::FLOAT, {"2"});
  add_node(g, "Relu", {"missing"}, {"y"}, "relu");
  add_output(g, "y", TensorProto::FLOAT, {"2"});
  expect_error([&] { import_proto(m); }, ErrorCode::InvalidModel,
               {"model 'test.onnx'", "node 'relu'", "'missing'"});

  onnx::ModelProto m2 = make_model(17);
  add_input(m2.mutable_graph(), "x", TensorProto::FLOAT, {"2"});
  add_output(m2.mutable_graph(), "nowhere", TensorProto::FLOAT, {"2"});
  expect_error([&] { import_proto(m2); }, ErrorCode::InvalidModel, {"output 'nowhere'"});

  onnx::ModelProto m3 = make_model(17);
  add_input(m3.mutable_graph(), "x", TensorProto::FLOAT, {"2"});
  add_node(m3.mutable_graph(), "Relu", {"x"}, {"x"}, "again");
  expect_error([&] { import_proto(m3); }, ErrorCode::InvalidModel, {"node 'again'", "'x'"});
}

TEST(OnnxImport, AttributesOfEveryKind) {
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", TensorProto::FLOAT, {"2"});
  auto* n = add_node(g, "Custom", {"x"}, {"y"}, "c");
  set_int(n, "i", -7);
  set_float(n, "f", 0.75f);
  set_string(n, "s", "hello");
  set_ints(n, "is", {1, -2, 3});
  set_floats(n, "fs", {0.5f, 1.5f});
  auto* strs = add_attr(n, "ss", onnx::AttributeProto::STRINGS);
  strs->add_strings("a");
  strs->add_strings("b");
  auto* t = add_attr(n, "t", onnx::AttributeProto::TENSOR)->mutable_t();
  t->set_data_type(TensorProto::INT32);
  t->add_dims(2);
  t->add_int32_data(5);
  t->add_int32_data(-6);
  auto* ts = add_attr(n, "ts", onnx::AttributeProto::TENSORS);
  ts->add_tensors()->CopyFrom(*t);
  auto* tp = add_attr(n, "tp", onnx::AttributeProto::TYPE_PROTO)->mutable_tp();
  set_tensor_type(tp, TensorProto::UINT8, {"k"});
  // An attribute without a type, as files before IR version 2 wrote them.
  auto* untyped = n->add_attribute();
  untyped->set_name("old");
  untyped->set_i(9);
  add_output(g, "y", TensorProto::FLOAT, {"2"});

  auto graph = import_proto(m);
  const ir::Node& c = node_named(*graph, "c");
  EXPECT_EQ(c.attr_int("i"), -7);
  EXPECT_EQ(c.attr_float("f"), 0.75f);
  EXPECT_EQ(c.attr_string("s"), "hello");
  EXPECT_EQ(c.attr_ints("is"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(c.attr_floats("fs"), (std::vector<float>{0.5f, 1.5f}));
  EXPECT_EQ(c.attr_strings("ss"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.attr_tensor("t").to_int_vector(), (std::vector<int64_t>{5, -6}));
  EXPECT_EQ(c.find_attribute("ts")->tensors.size(), 1u);
  EXPECT_EQ(c.find_attribute("tp")->tp.to_string(), "uint8[k]");
  EXPECT_EQ(c.attr_int("old"), 9);
}

TEST(OnnxImport, RefusesSparseTensorsAndMapTypes) {
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", TensorProto::FLOAT, {"2"});
  auto* n = add_node(g, "Constant", {}, {"y"}, "sparse_const");
  auto* a = add_attr(n, "sparse_value", onnx::AttributeProto::SPARSE_TENSOR);
  a->mutable_sparse_tensor()->add_dims(4);
  add_output(g, "y", TensorProto::FLOAT, {"4"});
  expect_error([&] { import_proto(m); }, ErrorCode::Unsupported,
               {"node 'sparse_const'", "sparse_value", "sparse"});

  onnx::ModelProto maps = make_model(17);
  auto* in = maps.mutable_graph()->add_input();
  in->set_name("m");
  in->mutable_type()->mutable_map_type()->set_key_type(TensorProto::INT64);
  expect_error([&] { import_proto(maps); }, ErrorCode::Unsupported, {"input 'm'", "map"});

  onnx::ModelProto sparse_init = make_model(17);
  sparse_init.mutable_graph()->add_sparse_initializer()->mutable_values()->set_name("sp");
  expect_error([&] { import_proto(sparse_init); }, ErrorCode::Unsupported,
               {"sparse initializer 'sp'"});
}

TEST(OnnxImport, RefusesCustomDomains) {
  for (const std::string domain : {"com.example", "ai.onnx.ml"}) {
    onnx::ModelProto m = make_model(17);
    auto* op = m.add_opset_import();
    op->set_domain(domain);
    op->set_version(1);
    auto* g = m.mutable_graph();
    add_input(g, "x", TensorProto::FLOAT, {"2"});
    add_node(g, "Relu", {"x"}, {"r"});
    add_node(g, "Frobnicate", {"r"}, {"y"}, "frob")->set_domain(domain);
    add_output(g, "y", TensorProto::FLOAT, {"2"});
    expect_error([&] { import_proto(m); }, ErrorCode::Unsupported,
                 {"model 'test.onnx'", "[Frobnicate] node 'frob'", "domain '" + domain + "'"});
  }
  // "ai.onnx" is the default domain under its long name.
  onnx::ModelProto m = make_model(17);
  add_input(m.mutable_graph(), "x", TensorProto::FLOAT, {"2"});
  add_node(m.mutable_graph(), "Relu", {"x"}, {"y"})->set_domain("ai.onnx");
  add_output(m.mutable_graph(), "y", TensorProto::FLOAT, {"2"});
  EXPECT_EQ(import_proto(m)->nodes()[0]->domain(), "");
}

TEST(OnnxImport, RefusesOpsetsOutsideTheKnownRange) {
  onnx::ModelProto m = make_model(onnx_import::kLatestOpset + 1);
  expect_error([&] { import_proto(m); }, ErrorCode::Unsupported,
               {"model 'test.onnx'", "default opset 22"});
  onnx::ModelProto only_other = make_model(17);
  only_other.mutable_opset_import(0)->set_domain("com.example");
  add_input(only_other.mutable_graph(), "x", TensorProto::FLOAT, {"2"});
  add_node(only_other.mutable_graph(), "Relu", {"x"}, {"y"}, "r");
  expect_error([&] { import_proto(only_other); }, ErrorCode::InvalidModel,
               {"node 'r'", "opset_import"});
}

// A chain of `levels` nested If nodes; the innermost then-branch reads the outer x.
onnx::ModelProto nested_ifs(int levels) {
  onnx::GraphProto inner;
  add_node(&inner, "Identity", {"x"}, {"out"});
  add_untyped_output(&inner, "out");
  onnx::GraphProto else_branch;
  add_node(&else_branch, "Identity", {"x"}, {"out"});
  add_untyped_output(&else_branch, "out");
  for (int level = 0; level < levels; ++level) {
    onnx::GraphProto wrapper;
    auto* n = add_node(&wrapper, "If", {"cond"}, {"out"});
    set_graph(n, "then_branch", std::move(inner));
    set_graph(n, "else_branch", else_branch);
    add_untyped_output(&wrapper, "out");
    inner.Swap(&wrapper);
  }
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "cond", TensorProto::BOOL, {});
  add_input(g, "x", TensorProto::FLOAT, {"2"});
  *g->mutable_node() = inner.node();
  add_output(g, "out", TensorProto::FLOAT, {"2"});
  return m;
}

TEST(OnnxImport, NestedIfsWithinTheLimitImport) {
  auto graph = import_proto(nested_ifs(10));
  EXPECT_EQ(graph->count_nodes_recursive(), 10u * 2 + 1);
}

TEST(OnnxImport, DeeplyNestedIfIsAnErrorNotACrash) {
  auto m = nested_ifs(200);
  expect_error([&] { import_proto(m); }, ErrorCode::InvalidModel,
               {"model 'test.onnx'", "[If] node 'If_0/If_0/", "limit of 64 levels"});
  // Far deeper than the parser allows: refused while parsing.
  auto deeper = nested_ifs(3000);
  expect_error([&] { import_proto(deeper); }, ErrorCode::InvalidModel,
               {"model 'test.onnx'", "nested more than"});
  onnx_import::ImportOptions strict;
  strict.max_subgraph_depth = 3;
  std::string bytes = nested_ifs(4).SerializeAsString();
  expect_error(
      [&] {
        onnx_import::import_model_from_bytes(bytes.data(), bytes.size(), "", "deep.onnx", nullptr,
                                             strict);
      },
      ErrorCode::InvalidModel, {"model 'deep.onnx'", "limit of 3 levels"});
}

TEST(OnnxImport, TruncatedFileNamesTheFile) {
  TempDir dir;
  onnx::ModelProto m = make_model(17);
  add_input(m.mutable_graph(), "x", TensorProto::FLOAT, {"2"});
  add_float_initializer(m.mutable_graph(), "w", {64}, std::vector<float>(64, 0.5f));
  add_node(m.mutable_graph(), "Add", {"x", "w"}, {"y"});
  add_output(m.mutable_graph(), "y", TensorProto::FLOAT, {"64"});
  std::string bytes = m.SerializeAsString();
  std::string path = dir.file("cut.onnx");
  for (size_t keep : {bytes.size() / 2, bytes.size() - 1, size_t{3}}) {
    write_bytes(path, bytes.substr(0, keep));
    expect_error([&] { onnx_import::import_model(path); }, ErrorCode::InvalidModel,
                 {"model '" + path + "'"});
  }
  write_bytes(path, "");
  expect_error([&] { onnx_import::import_model(path); }, ErrorCode::InvalidModel,
               {"model '" + path + "'", "no graph"});
  expect_error([&] { onnx_import::import_model(dir.file("absent.onnx")); },
               ErrorCode::InvalidArgument, {"absent.onnx", "cannot open"});
}

TEST(OnnxImport, RandomBytesAreRefused) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes(1 + rng() % 4096, '\0');
    for (char& ch : bytes) ch = static_cast<char>(rng());
    expect_error(
        [&] { onnx_import::import_model_from_bytes(bytes.data(), bytes.size(), "", "noise.onnx"); },
        ErrorCode::InvalidModel, {"model 'noise.onnx'"});
  }
}

TEST(OnnxImport, CorruptedModelsNeverCrash) {
  std::string good = model_with_if().SerializeAsString();
  std::mt19937 rng(99);
  int imported = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes = good;
    for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips)
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    try {
      onnx_import::import_model_from_bytes(bytes.data(), bytes.size(), "", "flip.onnx");
      ++imported;
    } catch (const Error& e) {
      EXPECT_NE(e.message().find("model 'flip.onnx'"), std::string::npos) << e.message();
      EXPECT_NE(e.code(), ErrorCode::Internal) << e.message();
    }
  }
  // Some flips land in names or values and leave a valid model.
  EXPECT_GT(imported, 0);
}

TEST(OnnxImport, ReadsValueFiles) {
  TempDir dir;
  TensorProto t;
  t.set_name("t");
  t.set_data_type(TensorProto::INT32);
  t.add_dims(3);
  for (int v : {4, -5, 6}) t.add_int32_data(v);
  write_bytes(dir.file("tensor.pb"), t.SerializeAsString());
  ir::Tensor read = onnx_import::read_tensor_proto_file(dir.file("tensor.pb"));
  EXPECT_EQ(read.to_int_vector(), (std::vector<int64_t>{4, -5, 6}));

  onnx::SequenceProto seq;
  seq.set_elem_type(onnx::SequenceProto::TENSOR);
  *seq.add_tensor_values() = t;
  *seq.add_tensor_values() = t;
  write_bytes(dir.file("seq.pb"), seq.SerializeAsString());
  ir::Type seq_type = ir::Type::sequence(ir::Type::tensor(DType::Int32));
  ir::Datum s = onnx_import::read_value_file(dir.file("seq.pb"), seq_type);
  ASSERT_TRUE(s.is_sequence());
  EXPECT_EQ(s.sequence.size(), 2u);
  EXPECT_EQ(s.sequence_dtype, DType::Int32);
  EXPECT_EQ(s.sequence[1].to_int_vector(), (std::vector<int64_t>{4, -5, 6}));

  onnx::OptionalProto none;
  none.set_elem_type(onnx::OptionalProto::UNDEFINED);
  write_bytes(dir.file("none.pb"), none.SerializeAsString());
  ir::Type opt_type = ir::Type::optional(ir::Type::tensor(DType::Int32));
  EXPECT_TRUE(onnx_import::read_value_file(dir.file("none.pb"), opt_type).is_empty());

  onnx::OptionalProto some;
  some.set_elem_type(onnx::OptionalProto::TENSOR);
  *some.mutable_tensor_value() = t;
  write_bytes(dir.file("some.pb"), some.SerializeAsString());
  ir::Datum o = onnx_import::read_value_file(dir.file("some.pb"), opt_type);
  ASSERT_TRUE(o.is_tensor());
  EXPECT_EQ(o.tensor.to_int_vector(), (std::vector<int64_t>{4, -5, 6}));

  write_bytes(dir.file("bad.pb"), t.SerializeAsString().substr(0, 5));
  expect_error([&] { onnx_import::read_tensor_proto_file(dir.file("bad.pb")); },
               ErrorCode::InvalidModel, {dir.file("bad.pb")});
}

}  // namespace
}  // namespace switchyard::onnx_test
