// If, Loop, Scan and SequenceMap on hand-built graphs whose bodies read outer values, nest
// control flow, carry sequences and stack scan outputs; checked against plain references. The
// bodies use the sequence ops for data movement so the tests depend on no arithmetic family.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_kernels.h"
#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

// Adds a node to any graph of the tree; outputs get names unique in the tree.
ir::Node* add_node(ir::Graph& g, const std::string& op, std::vector<ir::Value*> inputs,
                   std::vector<ir::Attribute> attrs = {}, int num_outputs = 1) {
  std::string name = g.name() + "_" + op + "_" + std::to_string(g.nodes().size());
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back(g.unique_value_name(name));
  ir::Node* n = g.add_node(op, name, inputs, outs);
  for (auto& a : attrs) n->set_attribute(std::move(a));
  return n;
}

ir::Value* add_op(ir::Graph& g, const std::string& op, std::vector<ir::Value*> inputs,
                  std::vector<ir::Attribute> attrs = {}) {
  return add_node(g, op, std::move(inputs), std::move(attrs))->output(0);
}

std::shared_ptr<ir::Graph> new_body(const std::string& name, ir::Graph& parent) {
  return std::make_shared<ir::Graph>(name, &parent);
}

ir::Attribute graph_attr(const std::string& name, std::shared_ptr<ir::Graph> g) {
  return ir::Attribute::make_graph(name, std::move(g));
}

// The main graph; sequence inputs are typed with the elements' common shape (unknown dims where
// they differ).
class GraphCase : public testing::GraphCase {
 public:
  ir::Value* sequence(const std::string& name, DType dtype, std::vector<ir::Tensor> items) {
    std::optional<ir::Shape> shape;
    if (!items.empty()) shape = ir::make_shape(items[0].shape());
    for (const ir::Tensor& t : items) {
      if (!shape || t.rank() != static_cast<int64_t>(shape->size())) {
        shape.reset();
        continue;
      }
      for (size_t d = 0; d < shape->size(); ++d)
        if ((*shape)[d] != ir::Dim(t.dim(static_cast<int64_t>(d)))) (*shape)[d] = ir::Dim();
    }
    return input(name, ir::Type::sequence(ir::Type::tensor(dtype, shape)),
                 ir::Datum::make_sequence(dtype, std::move(items)));
  }
};

std::vector<ir::Tensor> random_rows(DType dt, int64_t count, std::vector<int64_t> shape,
                                    uint64_t seed) {
  std::vector<ir::Tensor> rows;
  for (int64_t i = 0; i < count; ++i)
    rows.push_back(random_tensor(dt, shape, seed + static_cast<uint64_t>(i), -3, 3));
  return rows;
}

// Reference: tensors of one shape stacked along a new first axis.
ir::Tensor stack(const std::vector<ir::Tensor>& items) {
  std::vector<int64_t> shape = items[0].shape();
  shape.insert(shape.begin(), static_cast<int64_t>(items.size()));
  ir::Tensor out(items[0].dtype(), shape);
  size_t bytes = items[0].nbytes();
  for (size_t i = 0; i < items.size(); ++i)
    std::memcpy(static_cast<char*>(out.raw()) + i * bytes, items[i].raw(), bytes);
  return out;
}

// ---- If -------------------------------------------------------------------------------------

TEST(If, BranchesReadOuterValuesAndMayDifferInShape) {
  ir::Tensor x = random_tensor(DType::Float16, {3, 4}, 1);
  for (bool cond : {true, false}) {
    GraphCase c;
    ir::Value* cv = c.tensor("cond", bool_scalar(cond));
    ir::Value* xv = c.tensor("x", x);
    auto then_branch = new_body("then", c.graph());
    then_branch->add_output(xv);  // an outer value returned unchanged
    auto else_branch = new_body("else", c.graph());
    ir::Value* pair = add_op(*else_branch, "SequenceConstruct", {xv, xv});
    else_branch->add_output(
        add_op(*else_branch, "ConcatFromSequence", {pair}, {ir::Attribute::make_int("axis", 0)}));
    ir::Value* y =
        add_op(c.graph(), "If", {cv},
               {graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)});
    auto out = c.run({y});
    EXPECT_EQ(y->type().to_string(), "float16[?,4]");
    ASSERT_TRUE(out[0].is_tensor());
    expect_same(out[0].tensor, cond ? x : stack({x, x}).reshaped({6, 4}));
  }
}

TEST(If, OptionalAndSequenceOutputs) {
  ir::Tensor x = random_tensor(DType::Float32, {5}, 2);
  for (bool cond : {true, false}) {
    GraphCase c;
    ir::Value* cv = c.tensor("cond", bool_scalar(cond));
    ir::Value* xv = c.tensor("x", x);
    auto then_branch = new_body("then", c.graph());
    ir::Attribute type_attr;
    type_attr.name = "type";
    type_attr.kind = ir::Attribute::Kind::TypeProto;
    type_attr.tp = ir::Type::sequence(ir::Type::tensor(DType::Float32, ir::make_shape({5})));
    then_branch->add_output(add_op(*then_branch, "Optional", {}, {type_attr}));
    auto else_branch = new_body("else", c.graph());
    ir::Value* seq = add_op(*else_branch, "SequenceConstruct", {xv});
    else_branch->add_output(add_op(*else_branch, "Optional", {seq}));
    ir::Value* y =
        add_op(c.graph(), "If", {cv},
               {graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)});
    ir::Value* has = add_op(c.graph(), "OptionalHasElement", {y});
    auto out = c.run({y, has});
    EXPECT_EQ(y->type().to_string(), "optional(seq(float[5]))");
    if (cond) {
      EXPECT_TRUE(out[0].is_empty());
    } else {
      expect_sequence(out[0], {x});
    }
    EXPECT_EQ(out[1].tensor.data<bool>()[0], !cond);
  }
}

TEST(If, BranchDtypeConflictNamesNode) {
  GraphCase c;
  ir::Value* cv = c.tensor("cond", bool_scalar(true));
  ir::Value* a = c.tensor("a", random_tensor(DType::Float32, {2}, 3));
  ir::Value* b = c.tensor("b", random_tensor(DType::Int32, {2}, 4));
  auto then_branch = new_body("then", c.graph());
  then_branch->add_output(a);
  auto else_branch = new_body("else", c.graph());
  else_branch->add_output(b);
  add_node(c.graph(), "If", {cv},
           {graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)});
  expect_error([&] { c.finish({}); }, ErrorCode::InvalidModel,
               "[If] node 'main_If_0': output 0: then_branch gives float[2]");
}

TEST(If, SupportNamesABodyNodeWithoutKernel) {
  ir::Graph g("main");
  ir::Value* cond = g.add_input("cond", ir::Type::tensor(DType::Bool, ir::Shape{}));
  auto then_branch = new_body("then", g);
  then_branch->add_output(add_op(*then_branch, "NoSuchOp", {cond}));
  auto else_branch = new_body("else", g);
  else_branch->add_output(cond);
  ir::Node* n =
      add_node(g, "If", {cond},
               {graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)});
  runtime::Support s = cpu::cpu_kernels().supports(*n);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("body 'then' node 'then_NoSuchOp_0'"), std::string::npos) << s.reason;
}

// ---- Loop -----------------------------------------------------------------------------------

// A Loop over an outer sequence `rows`: carries a sequence of the rows seen and scans out each
// row and the iteration number. `trip_count` / `cond` may be null (omitted).
struct LoopCase {
  GraphCase c;
  ir::Node* loop = nullptr;
  std::shared_ptr<ir::Graph> body;

  LoopCase(const std::vector<ir::Tensor>& rows, std::optional<int64_t> trip_count,
           std::optional<bool> cond, const std::vector<bool>* flags = nullptr) {
    ir::Value* rv = c.sequence("rows", rows[0].dtype(), rows);
    ir::Value* m = trip_count ? c.tensor("M", int64_scalar(*trip_count)) : nullptr;
    ir::Value* cv = cond ? c.tensor("cond", bool_scalar(*cond)) : nullptr;
    ir::Value* flag_seq = nullptr;
    if (flags) {
      std::vector<ir::Tensor> fs;
      for (bool f : *flags) fs.push_back(bool_scalar(f));
      flag_seq = c.sequence("flags", DType::Bool, fs);
    }
    ir::Value* empty =
        add_op(c.graph(), "SequenceEmpty", {},
               {ir::Attribute::make_int("dtype", static_cast<int64_t>(rows[0].dtype()))});
    body = new_body("body", c.graph());
    ir::Value* i = body->add_input("i", {});
    ir::Value* cond_in = body->add_input("cond_in", {});
    ir::Value* acc = body->add_input("acc", {});
    ir::Value* row = add_op(*body, "SequenceAt", {rv, i});
    body->add_output(flag_seq ? add_op(*body, "SequenceAt", {flag_seq, i}) : cond_in);
    body->add_output(add_op(*body, "SequenceInsert", {acc, row}));
    body->add_output(row);
    body->add_output(i);
    loop = add_node(c.graph(), "Loop", {m, cv, empty}, {graph_attr("body", body)}, 3);
  }
  std::vector<ir::Datum> run() {
    return c.run({loop->output(0), loop->output(1), loop->output(2)});
  }
};

ir::Tensor iota(int64_t n) {
  ir::Tensor t(DType::Int64, {n});
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = i;
  return t;
}

TEST(Loop, TripCountCarriesSequenceAndScansOuterRows) {
  for (DType dt : {DType::Float32, DType::BFloat16, DType::Int32}) {
    SCOPED_TRACE(ir::dtype_name(dt));
    auto rows = random_rows(dt, 5, {2, 3}, 10);
    LoopCase l(rows, 3, true);
    auto out = l.run();
    std::vector<ir::Tensor> first3(rows.begin(), rows.begin() + 3);
    expect_sequence(out[0], first3);
    expect_same(out[1].tensor, stack(first3));
    expect_same(out[2].tensor, iota(3));
    EXPECT_EQ(l.loop->output(1)->type().to_string(), std::string(ir::dtype_name(dt)) + "[?,2,3]");
    EXPECT_EQ(l.loop->output(2)->type().to_string(), "int64[?]");
    EXPECT_EQ(l.body->inputs()[0]->type().to_string(), "int64[]");
  }
}

TEST(Loop, BodyConditionEndsTheLoop) {
  auto rows = random_rows(DType::Float32, 6, {4}, 20);
  std::vector<bool> flags = {true, true, false, true, true, true};
  {
    LoopCase l(rows, std::nullopt, std::nullopt, &flags);  // neither M nor cond: a while loop
    auto out = l.run();
    expect_same(out[2].tensor, iota(3));
  }
  {
    LoopCase l(rows, 2, true, &flags);  // M stops it first
    auto out = l.run();
    expect_same(out[2].tensor, iota(2));
    expect_sequence(out[0], {rows[0], rows[1]});
  }
}

TEST(Loop, NoIterationReturnsInitialValuesAndEmptyScans) {
  auto rows = random_rows(DType::Float32, 3, {2}, 30);
  for (auto [m, cond] : {std::pair<int64_t, bool>{0, true}, {4, false}, {-2, true}}) {
    LoopCase l(rows, m, cond);
    auto out = l.run();
    expect_sequence(out[0], {});
    EXPECT_EQ(out[0].sequence_dtype, DType::Float32);
    EXPECT_EQ(out[1].tensor.shape(), (std::vector<int64_t>{0, 2}));
    EXPECT_EQ(out[1].tensor.dtype(), DType::Float32);
    EXPECT_EQ(out[2].tensor.shape(), (std::vector<int64_t>{0}));
  }
}

TEST(Loop, NestedIfChoosesRowsFromTwoOuterScopes) {
  auto a_rows = random_rows(DType::Float32, 4, {3}, 40);
  auto b_rows = random_rows(DType::Float32, 4, {3}, 50);
  std::vector<bool> flags = {true, false, false, true};
  GraphCase c;
  ir::Value* av = c.sequence("a", DType::Float32, a_rows);
  ir::Value* bv = c.sequence("b", DType::Float32, b_rows);
  std::vector<ir::Tensor> fs;
  for (bool f : flags) fs.push_back(bool_scalar(f));
  ir::Value* fv = c.sequence("flags", DType::Bool, fs);
  ir::Value* m = c.tensor("M", int64_scalar(4));
  auto body = new_body("body", c.graph());
  ir::Value* i = body->add_input("i", {});
  ir::Value* cond_in = body->add_input("cond_in", {});
  ir::Value* flag = add_op(*body, "SequenceAt", {fv, i});
  auto then_branch = new_body("then", *body);
  then_branch->add_output(add_op(*then_branch, "SequenceAt", {av, i}));
  auto else_branch = new_body("else", *body);
  else_branch->add_output(add_op(*else_branch, "SequenceAt", {bv, i}));
  ir::Value* chosen =
      add_op(*body, "If", {flag},
             {graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)});
  body->add_output(cond_in);
  body->add_output(chosen);
  ir::Node* loop = add_node(c.graph(), "Loop", {m, nullptr}, {graph_attr("body", body)}, 1);
  auto out = c.run({loop->output(0)});
  std::vector<ir::Tensor> expected;
  for (size_t k = 0; k < flags.size(); ++k) expected.push_back(flags[k] ? a_rows[k] : b_rows[k]);
  expect_same(out[0].tensor, stack(expected));
}

TEST(Loop, GrowingCarriedValueGeneralizesBodyTypes) {
  // acc starts as float[0,2] and gains a row per iteration.
  auto rows = random_rows(DType::Float32, 3, {1, 2}, 60);
  GraphCase c;
  ir::Value* rv = c.sequence("rows", DType::Float32, rows);
  ir::Value* m = c.tensor("M", int64_scalar(3));
  ir::Value* init = c.tensor("init", ir::Tensor(DType::Float32, {0, 2}));
  auto body = new_body("body", c.graph());
  ir::Value* i = body->add_input("i", {});
  ir::Value* cond_in = body->add_input("cond_in", {});
  ir::Value* acc = body->add_input("acc", {});
  ir::Value* row = add_op(*body, "SequenceAt", {rv, i});
  ir::Value* pair = add_op(*body, "SequenceConstruct", {acc, row});
  body->add_output(cond_in);
  body->add_output(
      add_op(*body, "ConcatFromSequence", {pair}, {ir::Attribute::make_int("axis", 0)}));
  ir::Node* loop = add_node(c.graph(), "Loop", {m, nullptr, init}, {graph_attr("body", body)}, 1);
  auto out = c.run({loop->output(0)});
  EXPECT_EQ(acc->type().to_string(), "float[?,2]");
  EXPECT_EQ(loop->output(0)->type().to_string(), "float[?,2]");
  expect_same(out[0].tensor, stack(rows).reshaped({3, 2}));
}

TEST(Loop, BadTripCountAndConditionNameTheNode) {
  {
    GraphCase c;
    ir::Value* m = c.tensor("M", random_tensor(DType::Float32, {}, 1));
    auto body = new_body("body", c.graph());
    body->add_input("i", {});
    body->add_output(body->add_input("cond_in", {}));
    add_node(c.graph(), "Loop", {m, nullptr}, {graph_attr("body", body)}, 0);
    expect_error([&] { c.finish({}); }, ErrorCode::InvalidModel, "[Loop] node 'main_Loop_0'");
  }
  {
    // A trip count whose shape is only known at run time.
    GraphCase c;
    ir::Value* m = c.input("M", ir::Type::tensor(DType::Int64, ir::Shape{ir::Dim("n")}),
                           testing::int64_tensor({2, 3}));
    auto body = new_body("body", c.graph());
    ir::Value* i = body->add_input("i", {});
    body->add_output(body->add_input("cond_in", {}));
    body->add_output(i);
    ir::Node* loop = add_node(c.graph(), "Loop", {m, nullptr}, {graph_attr("body", body)}, 1);
    expect_error([&] { c.run({loop->output(0)}); }, ErrorCode::InvalidArgument,
                 "[Loop] node 'main_Loop_0': trip count must hold one element");
  }
  {
    GraphCase c;
    ir::Value* m = c.tensor("M", int64_scalar(2));
    ir::Value* ints = c.sequence("ints", DType::Int64, {int64_scalar(1), int64_scalar(0)});
    auto body = new_body("body", c.graph());
    ir::Value* i = body->add_input("i", {});
    body->add_input("cond_in", {});
    body->add_output(add_op(*body, "SequenceAt", {ints, i}));
    add_node(c.graph(), "Loop", {m, nullptr}, {graph_attr("body", body)}, 0);
    expect_error([&] { c.finish({}); }, ErrorCode::InvalidModel, "must be a bool tensor");
  }
}

TEST(Loop, ScanOutputShapeChangeFailsAtRunTime) {
  std::vector<ir::Tensor> rows = {random_tensor(DType::Float32, {2}, 1),
                                  random_tensor(DType::Float32, {3}, 2)};
  LoopCase l(rows, 2, true);
  expect_error([&] { l.run(); }, ErrorCode::InvalidArgument,
               "[Loop] node 'main_Loop_1': scan output 0 is float 3 in iteration 1");
}

TEST(Loop, ConcurrentRunsShareOneProgram) {
  auto rows = random_rows(DType::Float32, 8, {16}, 70);
  LoopCase l(rows, 8, true);
  l.c.finish({l.loop->output(0), l.loop->output(1), l.loop->output(2)});
  ir::Tensor expected = stack(rows);
  std::vector<std::string> errors = run_concurrently(4, 10, [&](int, int) {
    auto out = l.c.run();
    return testing::compare_tensors(out[1].tensor, expected, 0, 0);
  });
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

// ---- Scan -----------------------------------------------------------------------------------

TEST(Scan, AxesAndDirections) {
  for (DType dt : {DType::Float32, DType::Float16, DType::Int64}) {
    SCOPED_TRACE(ir::dtype_name(dt));
    ir::Tensor x = random_tensor(dt, {2, 3, 4}, 80, -9, 9);
    ir::Tensor y = random_tensor(dt, {3, 2}, 81, -9, 9);
    GraphCase c;
    ir::Value* xv = c.tensor("x", x);
    ir::Value* yv = c.tensor("y", y);
    ir::Value* init = add_op(c.graph(), "SequenceEmpty", {},
                             {ir::Attribute::make_int("dtype", static_cast<int64_t>(dt))});
    auto body = new_body("body", c.graph());
    ir::Value* state = body->add_input("state", {});
    ir::Value* xs = body->add_input("xs", {});
    ir::Value* ys = body->add_input("ys", {});
    body->add_output(add_op(*body, "SequenceInsert", {state, ys}));
    body->add_output(xs);
    body->add_output(ys);
    ir::Node* scan =
        add_node(c.graph(), "Scan", {init, xv, yv},
                 {graph_attr("body", body), ir::Attribute::make_int("num_scan_inputs", 2),
                  ir::Attribute::make_ints("scan_input_axes", {1, 0}),
                  ir::Attribute::make_ints("scan_input_directions", {1, 0}),
                  ir::Attribute::make_ints("scan_output_axes", {-1, 0}),
                  ir::Attribute::make_ints("scan_output_directions", {1, 0})},
                 3);
    auto out = c.run({scan->output(0), scan->output(1), scan->output(2)});
    EXPECT_EQ(xs->type().to_string(), std::string(ir::dtype_name(dt)) + "[2,4]");
    EXPECT_EQ(scan->output(1)->type().to_string(), std::string(ir::dtype_name(dt)) + "[2,4,3]");
    // Input scanned backwards along axis 1, output stacked backwards along the last axis:
    // out1[a][b][k] = x[a][k][b].
    ir::Tensor expected(dt, {2, 4, 3});
    size_t es = ir::dtype_size(dt);
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t b = 0; b < 4; ++b)
        for (int64_t k = 0; k < 3; ++k)
          std::memcpy(static_cast<char*>(expected.raw()) + ((a * 4 + b) * 3 + k) * es,
                      static_cast<const char*>(x.raw()) + ((a * 3 + k) * 4 + b) * es, es);
    expect_same(out[1].tensor, expected);
    expect_same(out[2].tensor, y);
    std::vector<ir::Tensor> y_rows;
    for (int64_t k = 0; k < 3; ++k) {
      ir::Tensor r(dt, {2});
      std::memcpy(r.raw(), static_cast<const char*>(y.raw()) + k * 2 * es, 2 * es);
      y_rows.push_back(r);
    }
    expect_sequence(out[0], y_rows);
  }
}

TEST(Scan, SymbolicLengthAndMismatchedLengths) {
  GraphCase c;
  ir::Value* xv = c.input("x", ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim("T"), 2}),
                          random_tensor(DType::Float32, {3, 2}, 90));
  ir::Value* yv = c.input("y", ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim("U")}),
                          random_tensor(DType::Float32, {4}, 91));
  auto body = new_body("body", c.graph());
  ir::Value* xs = body->add_input("xs", {});
  body->add_input("ys", {});
  body->add_output(xs);
  ir::Node* scan =
      add_node(c.graph(), "Scan", {xv, yv},
               {graph_attr("body", body), ir::Attribute::make_int("num_scan_inputs", 2)});
  c.finish({scan->output(0)});
  EXPECT_EQ(scan->output(0)->type().to_string(), "float[T,2]");
  expect_error([&] { c.run(); }, ErrorCode::InvalidArgument,
               "[Scan] node 'main_Scan_0': scan input 1 has length 4 along its scan axis");
}

TEST(Scan, StaticMismatchAndBadAttributesNameTheNode) {
  auto build = [](std::vector<int64_t> y_shape, std::vector<ir::Attribute> extra) {
    GraphCase c;
    ir::Value* xv = c.tensor("x", random_tensor(DType::Float32, {3, 2}, 1));
    ir::Value* yv = c.tensor("y", random_tensor(DType::Float32, y_shape, 2));
    auto body = new_body("body", c.graph());
    ir::Value* xs = body->add_input("xs", {});
    body->add_input("ys", {});
    body->add_output(xs);
    std::vector<ir::Attribute> attrs = {graph_attr("body", body),
                                        ir::Attribute::make_int("num_scan_inputs", 2)};
    for (auto& a : extra) attrs.push_back(a);
    add_node(c.graph(), "Scan", {xv, yv}, attrs);
    c.finish({});
  };
  expect_error([&] { build({4}, {}); }, ErrorCode::InvalidModel,
               "[Scan] node 'main_Scan_0': scan input 1 'y' has length 4");
  expect_error(
      [&] {
        build({3}, {ir::Attribute::make_ints("scan_input_directions", {0, 2})});
      },
      ErrorCode::InvalidModel, "'scan_input_directions' entries must be 0 or 1");
  expect_error([&] { build({3}, {ir::Attribute::make_ints("scan_input_axes", {0})}); },
               ErrorCode::InvalidModel, "'scan_input_axes' has 1 entries, expected 2");
}

// ---- SequenceMap ----------------------------------------------------------------------------

TEST(SequenceMap, MapsSequencesWithATensorAndOuterValue) {
  auto a = std::vector<ir::Tensor>{random_tensor(DType::Float32, {2}, 1),
                                   random_tensor(DType::Float32, {5}, 2),
                                   random_tensor(DType::Float32, {0}, 3)};
  auto b = random_rows(DType::Float32, 3, {1}, 4);
  ir::Tensor t = random_tensor(DType::Float32, {3}, 5);
  ir::Tensor outer = random_tensor(DType::Float32, {2}, 6);
  GraphCase c;
  ir::Value* av = c.sequence("a", DType::Float32, a);
  ir::Value* tv = c.tensor("t", t);
  ir::Value* bv = c.sequence("b", DType::Float32, b);
  ir::Value* ov = c.tensor("outer", outer);
  auto body = new_body("body", c.graph());
  ir::Value* ea = body->add_input("ea", {});
  ir::Value* et = body->add_input("et", {});
  ir::Value* eb = body->add_input("eb", {});
  ir::Value* parts = add_op(*body, "SequenceConstruct", {ea, et, eb, ov});
  body->add_output(
      add_op(*body, "ConcatFromSequence", {parts}, {ir::Attribute::make_int("axis", 0)}));
  body->add_output(add_op(*body, "SequenceLength", {parts}));
  ir::Node* map = add_node(c.graph(), "SequenceMap", {av, tv, bv}, {graph_attr("body", body)}, 2);
  auto out = c.run({map->output(0), map->output(1)});
  EXPECT_EQ(et->type().to_string(), "float[3]");
  EXPECT_EQ(map->output(0)->type().to_string(), "seq(float[?])");
  EXPECT_EQ(map->output(1)->type().to_string(), "seq(int64[])");
  ASSERT_TRUE(out[0].is_sequence());
  ASSERT_EQ(out[0].sequence.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    std::vector<double> expected;
    for (const ir::Tensor* p : {&a[k], &t, &b[k], &outer})
      for (double v : testing::to_doubles(*p)) expected.push_back(v);
    EXPECT_EQ(testing::to_doubles(out[0].sequence[k]), expected);
    EXPECT_EQ(out[1].sequence[k].data<int64_t>()[0], 4);
  }
}

TEST(SequenceMap, EmptyInputGivesEmptyTypedSequenceAndLengthsMustMatch) {
  {
    GraphCase c;
    ir::Value* av = c.sequence("a", DType::Int32, {});
    auto body = new_body("body", c.graph());
    ir::Value* ea = body->add_input("ea", {});
    body->add_output(add_op(*body, "SequenceLength", {add_op(*body, "SequenceConstruct", {ea})}));
    ir::Node* map = add_node(c.graph(), "SequenceMap", {av}, {graph_attr("body", body)});
    auto out = c.run({map->output(0)});
    ASSERT_TRUE(out[0].is_sequence());
    EXPECT_TRUE(out[0].sequence.empty());
    EXPECT_EQ(out[0].sequence_dtype, DType::Int64);
  }
  {
    GraphCase c;
    ir::Value* av = c.sequence("a", DType::Int32, random_rows(DType::Int32, 2, {1}, 1));
    ir::Value* bv = c.sequence("b", DType::Int32, random_rows(DType::Int32, 3, {1}, 2));
    auto body = new_body("body", c.graph());
    ir::Value* ea = body->add_input("ea", {});
    body->add_input("eb", {});
    body->add_output(ea);
    ir::Node* map = add_node(c.graph(), "SequenceMap", {av, bv}, {graph_attr("body", body)});
    expect_error([&] { c.run({map->output(0)}); }, ErrorCode::InvalidArgument,
                 "[SequenceMap] node 'main_SequenceMap_0': input 1 is a sequence of 3 elements");
  }
}

}  // namespace
}  // namespace switchyard::testing
