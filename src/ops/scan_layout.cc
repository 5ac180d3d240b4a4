#include "ops/scan_layout.h"

#include "ir/check.h"

namespace switchyard::ops {

ScanLayout scan_layout(const ir::Node& node, const ir::Graph& body) {
  ScanLayout s;
  const auto num_scan_in = static_cast<size_t>(node.attr_int("num_scan_inputs"));
  SY_CHECK(num_scan_in >= 1 && num_scan_in <= node.num_inputs(), InvalidModel,
           "{}: attribute 'num_scan_inputs' {} must be in [1, {}]", node.describe(), num_scan_in,
           node.num_inputs());
  s.num_states = node.num_inputs() - num_scan_in;
  SY_CHECK(node.num_outputs() >= s.num_states, InvalidModel,
           "{}: has {} outputs, fewer than its {} state values", node.describe(),
           node.num_outputs(), s.num_states);
  const size_t num_scan_out = node.num_outputs() - s.num_states;
  s.in_axes = node.attr_ints("scan_input_axes", std::vector<int64_t>(num_scan_in, 0));
  s.out_axes = node.attr_ints("scan_output_axes", std::vector<int64_t>(num_scan_out, 0));
  for (int64_t d : node.attr_ints("scan_input_directions", std::vector<int64_t>(num_scan_in, 0)))
    s.in_reverse.push_back(d != 0);
  for (int64_t d : node.attr_ints("scan_output_directions", std::vector<int64_t>(num_scan_out, 0)))
    s.out_reverse.push_back(d != 0);
  SY_CHECK(s.in_axes.size() == num_scan_in && s.in_reverse.size() == num_scan_in &&
               s.out_axes.size() == num_scan_out && s.out_reverse.size() == num_scan_out,
           InvalidModel,
           "{}: scan axis and direction attributes need {} input and {} output entries",
           node.describe(), num_scan_in, num_scan_out);
  SY_CHECK(body.inputs().size() == node.num_inputs() && body.outputs().size() == node.num_outputs(),
           InvalidModel, "{}: body '{}' has {} inputs and {} outputs, expected {} and {}",
           node.describe(), body.name(), body.inputs().size(), body.outputs().size(),
           node.num_inputs(), node.num_outputs());
  for (size_t j = 0; j < num_scan_out; ++j)
    s.scan_output_types.push_back(body.outputs()[s.num_states + j]->type());
  return s;
}

}  // namespace switchyard::ops
