#include "support/infer_test_util.h"

#include <gtest/gtest.h>

#include "ir/check.h"
#include "ops/schema.h"

namespace switchyard::testing {

std::string InferredNode::out(size_t i) const { return node->output(i)->type().to_string(); }

InferredNode infer_node(const std::string& op, const std::vector<InferArg>& args,
                        const std::vector<ir::Attribute>& attrs, int num_outputs) {
  InferredNode b{std::make_unique<ir::Graph>("test"), nullptr};
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (args[i].type)
      ins.push_back(b.graph->add_input(name, *args[i].type));
    else if (args[i].constant)
      ins.push_back(b.graph->add_constant(name, *args[i].constant));
    else
      ins.push_back(nullptr);
  }
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back("out" + std::to_string(i));
  b.node = b.graph->add_node(op, "node", ins, outs);
  for (const auto& a : attrs) b.node->set_attribute(a);
  ops::infer_types(*b.graph);
  return b;
}

std::vector<ir::Type> infer_op(const std::string& op, const std::vector<InferArg>& args,
                               const std::vector<ir::Attribute>& attrs, int num_outputs) {
  InferredNode b = infer_node(op, args, attrs, num_outputs);
  std::vector<ir::Type> types;
  for (ir::Value* v : b.node->outputs()) types.push_back(v->type());
  return types;
}

ir::Type infer_type(const std::string& op, const std::vector<InferArg>& args,
                    const std::vector<ir::Attribute>& attrs) {
  return infer_op(op, args, attrs)[0];
}

std::string infer1(const std::string& op, const std::vector<InferArg>& args,
                   const std::vector<ir::Attribute>& attrs) {
  return infer_type(op, args, attrs).to_string();
}

InferredNode build_node(const std::string& op, const std::vector<ir::Type>& types, int num_outputs,
                        const std::vector<ir::Attribute>& attrs,
                        const std::vector<std::optional<ir::Tensor>>& constants) {
  std::vector<InferArg> args;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i < constants.size() && constants[i])
      args.emplace_back(*constants[i]);
    else
      args.emplace_back(types[i]);
  }
  return infer_node(op, args, attrs, num_outputs);
}

std::vector<std::string> to_strings(const std::vector<ir::Type>& types) {
  std::vector<std::string> out;
  for (const ir::Type& t : types) out.push_back(t.to_string());
  return out;
}

ir::Dim sym(const std::string& name) { return ir::Dim(name); }

void expect_invalid(const std::string& op, const std::vector<InferArg>& args,
                    const std::vector<ir::Attribute>& attrs, const std::string& fragment,
                    int num_outputs) {
  try {
    infer_op(op, args, attrs, num_outputs);
    ADD_FAILURE() << "expected InvalidModel containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << e.what();
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'node'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

void expect_fails_naming_node(const std::function<void()>& f) {
  try {
    f();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
  }
}

}  // namespace switchyard::testing
