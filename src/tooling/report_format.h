// Renderings of the placement report (its model: placement/report.h) for `explain`, `run
// --explain` and Executable::explain().
#pragma once

#include <string>

#include "placement/report.h"

namespace switchyard::tooling {

/// Summary line, then a table: node, op, device, cause, reason; then partitions and copies.
std::string format_text(const placement::PlacementReport& report);
/// JSON with the schema documented in docs/placement.md.
std::string format_json(const placement::PlacementReport& report);
/// Graphviz DOT: nodes coloured by device, one cluster per partition, copies as dashed edges.
std::string format_dot(const placement::PlacementReport& report);
/// A self-contained HTML page (no external resources): nodes coloured by device, partitions
/// boxed, copies marked, a legend, readable on a 500-node model.
std::string format_html(const placement::PlacementReport& report);
/// The report in `format`: "text", "json", "dot" or "html"; throws InvalidArgument naming the
/// format otherwise.
std::string format_report(const placement::PlacementReport& report, const std::string& format);

}  // namespace switchyard::tooling
