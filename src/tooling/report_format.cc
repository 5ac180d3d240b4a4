// The placement report's renderings: the text table, JSON (schema in docs/placement.md),
// Graphviz DOT and a self-contained HTML page.
#include "tooling/report_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <utility>

#include "ir/check.h"

namespace switchyard::tooling {

// The report model's types and the words it shares with its summary.
using placement::all_devices;
using placement::Cause;
using placement::cause_name;
using placement::CopyInfo;
using placement::count_of;
using placement::devices_in_use;
using placement::EdgeInfo;
using placement::FusionInfo;
using placement::join;
using placement::NodeDecision;
using placement::PartitionInfo;
using placement::PlacementReport;
using placement::split_devices;

namespace {

using Json = nlohmann::ordered_json;

constexpr Cause kAllCauses[] = {Cause::Pinned,    Cause::Unsupported, Cause::HostShape,
                                Cause::Preferred, Cause::Split,       Cause::Island};

/// A fixed colour per device, shared by DOT and HTML: the cpu grey-blue, the others distinct
/// colours in the order of all_devices(), so the same report always draws the same way.
std::map<std::string, std::string> device_colours(const PlacementReport& report) {
  static constexpr const char* kPalette[] = {"#f4a261", "#72c7a4", "#c7a2dd", "#f2d15c",
                                             "#ef8f86", "#80c6e6", "#b8cc6e", "#e3a6c9"};
  std::map<std::string, std::string> out;
  size_t next = 0;
  for (const std::string& device : all_devices(report)) {
    if (device == "cpu") {
      out[device] = "#a9bcd0";
    } else {
      out[device] = kPalette[next % std::size(kPalette)];
      ++next;
    }
  }
  return out;
}

std::string format_us(double us) { return fmt::format("{:.1f}", us); }

/// The reason with, for islands, both estimates (the copy cost and the saving), unless the
/// reason already states them: the placer usually writes them into its sentence.
std::string full_reason(const NodeDecision& node) {
  if (node.cause != Cause::Island) return node.reason;
  std::string copy_cost = format_us(node.copy_cost_us);
  std::string saving = format_us(node.saving_us);
  if (node.reason.find(copy_cost) != std::string::npos &&
      node.reason.find(saving) != std::string::npos)
    return node.reason;
  std::string estimates = fmt::format("estimated copies {} µs, saving {} µs", copy_cost, saving);
  return node.reason.empty() ? estimates : fmt::format("{} ({})", node.reason, estimates);
}

std::string partition_label(int partition, const char* none) {
  return partition < 0 ? std::string(none) : std::to_string(partition);
}

/// Width on a terminal: UTF-8 code points (µ, →, — are one column each).
size_t display_width(std::string_view text) {
  size_t width = 0;
  for (char c : text) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return width;
}

/// Rows as aligned columns, two spaces apart; columns flagged in `right` align right (numbers);
/// the last column is not padded.
std::string format_table(const std::vector<std::vector<std::string>>& rows,
                         const std::string& indent, const std::vector<bool>& right = {}) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      size_t padding = widths[c] - display_width(row[c]);
      bool align_right = c < right.size() && right[c];
      if (align_right) line.append(padding, ' ');
      line += row[c];
      if (c + 1 < row.size()) line.append((align_right ? 0 : padding) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string bytes_text(int64_t bytes) { return bytes < 0 ? "?" : std::to_string(bytes); }

/// "588.0 KiB"; "?" when unknown.
std::string human_bytes(int64_t bytes) {
  if (bytes < 0) return "?";
  if (bytes < 1024) return fmt::format("{} B", bytes);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  value /= 1024;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

Json optional_index(int index) { return index < 0 ? Json(nullptr) : Json(index); }

Json report_json(const PlacementReport& report) {
  Json doc;
  doc["schema"] = "switchyard.placement/1";
  doc["model"] = report.model;
  doc["target"] = report.target;
  doc["devices"] = report.devices;
  doc["policy"] = report.policy;
  doc["summary"] = report.summary();
  doc["notes"] = report.notes;
  Json nodes = Json::array();
  for (const NodeDecision& node : report.nodes) {
    Json entry;
    entry["name"] = node.node;
    entry["op"] = node.op;
    entry["device"] = node.device;
    entry["cause"] = cause_name(node.cause);
    entry["reason"] = node.reason;
    entry["partition"] = optional_index(node.partition);
    if (!node.precision.empty()) entry["precision"] = node.precision;
    if (!node.fused_into.empty()) entry["fused_into"] = node.fused_into;
    if (node.cause == Cause::Island) {
      entry["copy_cost_us"] = node.copy_cost_us;
      entry["saving_us"] = node.saving_us;
    }
    nodes.push_back(std::move(entry));
  }
  doc["nodes"] = std::move(nodes);
  Json fusions = Json::array();
  for (const FusionInfo& f : report.fusions)
    fusions.push_back({{"partition", f.partition}, {"device", f.device}, {"nodes", f.nodes}});
  doc["fusions"] = std::move(fusions);
  Json partitions = Json::array();
  for (const PartitionInfo& partition : report.partitions) {
    partitions.push_back({{"index", partition.index},
                          {"device", partition.device},
                          {"nodes", partition.nodes},
                          {"estimated_us", partition.estimated_us}});
  }
  doc["partitions"] = std::move(partitions);
  Json copies = Json::array();
  for (const CopyInfo& copy : report.copies) {
    copies.push_back({{"value", copy.value},
                      {"from", copy.from_device},
                      {"to", copy.to_device},
                      {"from_partition", optional_index(copy.from_partition)},
                      {"to_partition", optional_index(copy.to_partition)},
                      {"bytes", copy.bytes < 0 ? Json(nullptr) : Json(copy.bytes)}});
  }
  doc["copies"] = std::move(copies);
  Json edges = Json::array();
  for (const EdgeInfo& edge : report.edges) {
    edges.push_back({{"from", edge.from_node},
                     {"to", edge.to_node},
                     {"value", edge.value},
                     {"copy", edge.copy},
                     {"control", edge.control}});
  }
  doc["edges"] = std::move(edges);
  return doc;
}

/// A DOT double-quoted string: quotes and backslashes escaped, newlines as \n.
std::string dot_quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c != '\r') {
      out += c;
    }
  }
  return out + "\"";
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// JSON that is safe inside a <script> element: no '<', '>' or '&' can end or open a tag.
std::string script_safe_json(const Json& doc) {
  std::string text = doc.dump(1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else {
      out += c;
    }
  }
  return out;
}

/// The letter marking a node's cause on HTML chips; preferred and split nodes carry none.
const char* cause_badge(Cause cause) {
  switch (cause) {
    case Cause::Pinned:
      return "P";
    case Cause::Unsupported:
      return "U";
    case Cause::HostShape:
      return "H";
    case Cause::Island:
      return "I";
    case Cause::Preferred:
    case Cause::Split:
      return "";
  }
  return "";
}

const char* cause_meaning(Cause cause) {
  switch (cause) {
    case Cause::Pinned:
      return "placed by a --pin";
    case Cause::Unsupported:
      return "the target cannot run it; fell back to the cpu";
    case Cause::HostShape:
      return "a small shape computation kept on the host";
    case Cause::Preferred:
      return "on the target device";
    case Cause::Split:
      return "a pipeline stage's device";
    case Cause::Island:
      return "moved to its neighbours' device: copies cost more than it saves";
  }
  return "";
}

constexpr std::string_view kHtmlStyle = R"css(
*{box-sizing:border-box}
body{margin:0;font:14px/1.4 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;
 color:#1d232b;background:#f5f6f8}
header{background:#1f2a37;color:#f3f5f7;padding:16px 24px}
header h1{margin:0 0 4px;font-size:13px;font-weight:600;letter-spacing:.04em;color:#aab6c4;
 text-transform:uppercase}
header .summary{font-size:18px;font-weight:600;word-break:break-word}
header .meta{margin-top:6px;color:#c2ccd6;font-size:13px}
header .meta span{margin-right:18px}
main{padding:16px 24px 40px;max-width:1800px}
section{margin-bottom:22px}
h2{font-size:15px;margin:0 0 8px}
.legend{display:flex;flex-wrap:wrap;gap:8px 28px;background:#fff;border:1px solid #dde1e6;
 border-radius:8px;padding:10px 14px}
.legend .group{display:flex;flex-wrap:wrap;gap:6px 16px;align-items:center}
.legend .title{font-weight:600;color:#56606b;margin-right:2px}
.legend .item{display:inline-flex;align-items:center;gap:6px;white-space:nowrap}
.swatch{display:inline-block;width:14px;height:14px;border-radius:3px;border:1px solid #0003;
 vertical-align:-2px}
.muted{color:#6b7580}
.badge{display:inline-block;min-width:15px;height:15px;padding:0 3px;border-radius:3px;
 background:#1f2a37;color:#fff;font-size:10px;font-weight:700;line-height:15px;text-align:center}
.partition{background:#fff;border:1px solid #d3d8de;border-left:6px solid var(--c);
 border-radius:8px;margin:0}
.partition>summary{cursor:pointer;padding:7px 12px;font-weight:600;list-style-position:inside}
.partition>summary .muted{font-weight:400;margin-left:10px}
.chips{display:flex;flex-wrap:wrap;gap:4px;padding:2px 10px 10px}
.chip{display:inline-flex;align-items:baseline;gap:5px;max-width:340px;padding:2px 7px 2px 5px;
 border-radius:4px;background:var(--c);background:color-mix(in srgb,var(--c) 42%,#fff);
 border:1px solid #0001;border-left:4px solid var(--c);color:#1d232b;
 text-decoration:none;font-size:12px;white-space:nowrap;overflow:hidden}
.chip.unsupported{border-color:#b3261e;border-left-color:var(--c);box-shadow:0 0 0 1px #b3261e}
.chip b{font-weight:600;overflow:hidden;text-overflow:ellipsis;direction:rtl;text-align:left}
.chip i{font-style:normal;color:#3b4550;font-size:11px}
.chip .badge{align-self:center}
.chip:hover{outline:2px solid #1f2a37}
.chip.dim{opacity:.18}
.copies{display:flex;flex-wrap:wrap;gap:4px 8px;align-items:center;padding:5px 0 5px 18px;
 margin:0;font-size:12px;color:#9b2c2c}
.copies::before{content:"\21E3";font-size:18px;line-height:1;margin-right:2px}
.copy{border:1px dashed #c0392b;border-radius:4px;padding:1px 6px;background:#fff6f5;
 white-space:nowrap}
.gap{height:10px}
.controls{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin-bottom:8px}
.controls input,.controls select{font:inherit;padding:4px 8px;border:1px solid #c4cad1;
 border-radius:5px;background:#fff}
.controls input{width:320px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #dde1e6;font-size:13px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eceff2;vertical-align:top}
th{position:sticky;top:0;background:#e9edf1;cursor:pointer;user-select:none;white-space:nowrap}
th[data-dir=asc]::after{content:" \25B2";font-size:10px}
th[data-dir=desc]::after{content:" \25BC";font-size:10px}
td.num,th.num{text-align:right}
td.device{white-space:nowrap}
td.name{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}
tr:target td{background:#fff3bf}
tbody tr:hover td{background:#f4f7fa}
.cause-unsupported{color:#b3261e;font-weight:600}
.cause-pinned{color:#1b5fa8;font-weight:600}
.cause-island{color:#7a4fa0;font-weight:600}
.cause-host_shape{color:#2f7a55;font-weight:600}
)css";

constexpr std::string_view kHtmlScript = R"js(
(function () {
  var table = document.getElementById('node-table');
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var text = document.getElementById('filter-text');
  var device = document.getElementById('filter-device');
  var cause = document.getElementById('filter-cause');
  var count = document.getElementById('filter-count');
  var chips = document.querySelectorAll('.chip[data-row]');
  function apply() {
    var query = text.value.trim().toLowerCase();
    var shown = 0;
    rows.forEach(function (row) {
      var ok = (!query || row.dataset.search.indexOf(query) >= 0) &&
               (!device.value || row.dataset.device === device.value) &&
               (!cause.value || row.dataset.cause === cause.value);
      row.hidden = !ok;
      if (ok) shown++;
    });
    var filtered = query || device.value || cause.value;
    chips.forEach(function (chip) {
      chip.classList.toggle('dim', !!filtered && rows[chip.dataset.row].hidden);
    });
    count.textContent = shown + ' of ' + rows.length + ' nodes';
  }
  [text, device, cause].forEach(function (el) { el.addEventListener('input', apply); });
  var headers = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(headers, function (th, column) {
    th.addEventListener('click', function () {
      var dir = th.dataset.dir === 'asc' ? 'desc' : 'asc';
      Array.prototype.forEach.call(headers, function (h) { delete h.dataset.dir; });
      th.dataset.dir = dir;
      var numeric = th.classList.contains('num');
      var sign = dir === 'asc' ? 1 : -1;
      var sorted = rows.slice().sort(function (a, b) {
        var x = a.cells[column].dataset.key || a.cells[column].textContent;
        var y = b.cells[column].dataset.key || b.cells[column].textContent;
        var order = numeric ? Number(x) - Number(y) : x.localeCompare(y);
        return sign * order || Number(a.dataset.index) - Number(b.dataset.index);
      });
      sorted.forEach(function (row) { body.appendChild(row); });
    });
  });
  window.addEventListener('hashchange', function () {
    var row = document.getElementById(location.hash.slice(1));
    if (row && row.hidden) {
      text.value = ''; device.value = ''; cause.value = '';
      apply();
      row.scrollIntoView({block: 'center'});
    }
  });
  apply();
})();
)js";

/// One <option> per value, with a count, for the table's filter boxes.
std::string filter_options(const std::vector<std::pair<std::string, size_t>>& values) {
  std::string out;
  for (const auto& [value, count] : values) {
    out += fmt::format("<option value=\"{0}\">{0} ({1})</option>", html_escape(value), count);
  }
  return out;
}

std::string copy_chip(const CopyInfo& copy) {
  std::string size = copy.bytes < 0 ? "size unknown: symbolic shape" : human_bytes(copy.bytes);
  return fmt::format(
      "<span class=\"copy\" title=\"{} bytes\">copy <b>{}</b> {} &#8594; {} ({})</span>",
      bytes_text(copy.bytes), html_escape(copy.value), html_escape(copy.from_device),
      html_escape(copy.to_device), size);
}

std::string copies_band(const std::vector<const CopyInfo*>& copies, const std::string& label) {
  if (copies.empty()) return "<div class=\"gap\"></div>\n";
  std::string out = "<div class=\"copies\"><span>" + html_escape(label) + "</span>";
  for (const CopyInfo* copy : copies) out += copy_chip(*copy);
  return out + "</div>\n";
}

}  // namespace

std::string format_text(const PlacementReport& report) {
  std::string out = report.summary() + "\n";
  std::vector<std::string> meta;
  if (!report.model.empty()) meta.push_back("model: " + report.model);
  if (!report.target.empty()) meta.push_back("target: " + report.target);
  if (!report.devices.empty()) meta.push_back("devices: " + join(report.devices, ", "));
  if (!report.policy.empty()) meta.push_back("policy: " + report.policy);
  if (!meta.empty()) out += join(meta, "  ") + "\n";
  for (const std::string& note : report.notes) out += "note: " + note + "\n";

  // The precision column appears when some device reports one (GPUs under --precision).
  bool precisions = false;
  for (const NodeDecision& node : report.nodes) precisions = precisions || !node.precision.empty();
  std::vector<std::vector<std::string>> rows = {
      {"node", "op", "device", "partition", "cause", "reason"}};
  if (precisions) rows[0].insert(rows[0].begin() + 4, "precision");
  for (const NodeDecision& node : report.nodes) {
    rows.push_back({node.node, node.op, node.device, partition_label(node.partition, "-"),
                    cause_name(node.cause), full_reason(node)});
    if (precisions)
      rows.back().insert(rows.back().begin() + 4, node.precision.empty() ? "-" : node.precision);
  }
  out += "\n" + format_table(rows, "", {false, false, false, true});

  out += "\npartitions\n";
  if (report.partitions.empty()) {
    out += "  none\n";
  } else {
    rows = {{"index", "device", "nodes", "estimated µs"}};
    for (const PartitionInfo& partition : report.partitions) {
      rows.push_back({std::to_string(partition.index), partition.device,
                      std::to_string(partition.nodes.size()), format_us(partition.estimated_us)});
    }
    out += format_table(rows, "  ", {true, false, true, true});
  }

  if (!report.fusions.empty()) {
    out += "\nfused kernels\n";
    for (const FusionInfo& f : report.fusions)
      out += fmt::format("  {} ({}, partition {})\n", join(f.nodes, " + "), f.device, f.partition);
  }

  out += "\ncopies\n";
  if (report.copies.empty()) {
    out += "  none\n";
  } else {
    rows = {{"value", "from → to", "partitions", "bytes"}};
    for (const CopyInfo& copy : report.copies) {
      rows.push_back({copy.value, copy.from_device + " → " + copy.to_device,
                      partition_label(copy.from_partition, "input") + " → " +
                          partition_label(copy.to_partition, "output"),
                      bytes_text(copy.bytes)});
    }
    out += format_table(rows, "  ", {false, false, false, true});
  }

  // Control dependencies: each orders a node after another without moving data.
  std::map<std::string, int> partition_of;
  for (const NodeDecision& node : report.nodes) partition_of[node.node] = node.partition;
  rows = {{"node", "runs after", "partitions", "data"}};
  for (const EdgeInfo& edge : report.edges) {
    if (!edge.control) continue;
    rows.push_back({edge.to_node, edge.from_node,
                    partition_label(partition_of[edge.from_node], "-") + " → " +
                        partition_label(partition_of[edge.to_node], "-"),
                    "none (control)"});
  }
  if (rows.size() > 1) out += "\ncontrol dependencies\n" + format_table(rows, "  ", {});
  return out;
}

std::string format_json(const PlacementReport& report) {
  return report_json(report).dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string format_dot(const PlacementReport& report) {
  const std::map<std::string, std::string> colours = device_colours(report);
  auto node_line = [&](const NodeDecision& node) {
    std::string label = node.node + "\n" + node.op + "\n" + cause_name(node.cause);
    std::string tooltip = node.reason.empty() ? std::string(cause_name(node.cause)) : node.reason;
    return fmt::format("{} [label={}, fillcolor=\"{}\", tooltip={}];\n", dot_quote(node.node),
                       dot_quote(label), colours.at(node.device), dot_quote(tooltip));
  };

  std::string out = "digraph placement {\n  rankdir=TB;\n";
  out += "  label=" + dot_quote(report.summary()) + ";\n  labelloc=t;\n  fontname=\"Helvetica\";\n";
  out += "  node [shape=box, style=\"filled,rounded\", fontname=\"Helvetica\", fontsize=10];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=9];\n";

  std::set<int> drawn;
  for (const PartitionInfo& partition : report.partitions) {
    if (!drawn.insert(partition.index).second) continue;
    const std::string& colour = colours.at(partition.device);
    out += fmt::format("  subgraph cluster_{} {{\n", partition.index);
    out += fmt::format(
        "    label={};\n    style=\"rounded,bold\";\n    color=\"{}\";\n",
        dot_quote(fmt::format("partition {} — {}", partition.index, partition.device)), colour);
    for (const NodeDecision& node : report.nodes) {
      if (node.partition == partition.index) out += "    " + node_line(node);
    }
    out += "  }\n";
  }
  for (const NodeDecision& node : report.nodes) {
    if (!drawn.count(node.partition)) out += "  " + node_line(node);
  }
  for (const EdgeInfo& edge : report.edges) {
    out += fmt::format("  {} -> {}", dot_quote(edge.from_node), dot_quote(edge.to_node));
    if (edge.control) {
      // A control dependency: an ordering edge, no data.
      out += " [style=dotted, arrowhead=empty, color=\"#7f8c8d\", label=\"control\"]";
    } else if (edge.copy) {
      out += fmt::format(" [style=dashed, color=\"#c0392b\", fontcolor=\"#c0392b\", label={}]",
                         dot_quote(edge.value));
    }
    out += ";\n";
  }
  return out + "}\n";
}

std::string format_html(const PlacementReport& report) {
  const std::map<std::string, std::string> colours = device_colours(report);
  const std::vector<std::string> targets = split_devices(report.target);
  std::map<std::string, size_t> row_of;
  for (size_t i = 0; i < report.nodes.size(); ++i) row_of.emplace(report.nodes[i].node, i);

  std::string title = report.model.empty() ? "placement" : "placement — " + report.model;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + html_escape(title) + "</title>\n<style>" + std::string(kHtmlStyle) +
         "</style>\n</head>\n<body>\n";

  out += "<header>\n<h1>" + html_escape(title) + "</h1>\n";
  out += "<div class=\"summary\">" + html_escape(report.summary()) + "</div>\n<div class=\"meta\">";
  if (!report.target.empty())
    out += "<span>target <b>" + html_escape(report.target) + "</b></span>";
  if (!report.devices.empty())
    out += "<span>devices " + html_escape(join(report.devices, ", ")) + "</span>";
  if (!report.policy.empty()) out += "<span>policy " + html_escape(report.policy) + "</span>";
  out += fmt::format("<span>{} · {} · {}</span>", count_of(report.nodes.size(), "node", "nodes"),
                     count_of(report.partitions.size(), "partition", "partitions"),
                     count_of(report.copies.size(), "copy", "copies"));
  out += "</div>\n</header>\n<main>\n";

  // Legend: device colours with their counts, then the causes present with their badges.
  std::vector<std::pair<std::string, size_t>> device_counts;
  for (const std::string& device : all_devices(report)) {
    size_t count = std::count_if(report.nodes.begin(), report.nodes.end(),
                                 [&](const NodeDecision& n) { return n.device == device; });
    device_counts.emplace_back(device, count);
  }
  std::vector<std::pair<std::string, size_t>> cause_counts;
  out += "<section class=\"legend\">\n<div class=\"group\"><span class=\"title\">Devices</span>";
  for (const auto& [device, count] : device_counts) {
    size_t num_partitions =
        std::count_if(report.partitions.begin(), report.partitions.end(),
                      [&](const PartitionInfo& p) { return p.device == device; });
    bool is_target = std::find(targets.begin(), targets.end(), device) != targets.end();
    out += fmt::format(
        "<span class=\"item\"><span class=\"swatch\" style=\"background:{}\"></span><b>{}</b>"
        "<span class=\"muted\">{} · {}{}</span></span>",
        colours.at(device), html_escape(device), count_of(count, "node", "nodes"),
        count_of(num_partitions, "partition", "partitions"), is_target ? " · target" : "");
  }
  out += "</div>\n<div class=\"group\"><span class=\"title\">Causes</span>";
  for (Cause cause : kAllCauses) {
    size_t count = std::count_if(report.nodes.begin(), report.nodes.end(),
                                 [&](const NodeDecision& n) { return n.cause == cause; });
    if (count == 0) continue;
    cause_counts.emplace_back(cause_name(cause), count);
    std::string badge = *cause_badge(cause)
                            ? fmt::format("<span class=\"badge\">{}</span>", cause_badge(cause))
                            : "";
    out += fmt::format(
        "<span class=\"item\" title=\"{}\">{}<span class=\"cause-{}\">{}</span>"
        "<span class=\"muted\">{}</span></span>",
        cause_meaning(cause), badge, cause_name(cause), cause_name(cause), count);
  }
  out += "</div>\n</section>\n";

  // Partitions in execution order, each preceded by the copies that feed it.
  out += "<section>\n<h2>Partitions, in execution order</h2>\n";
  std::map<int, std::vector<const CopyInfo*>> copies_into;
  std::vector<const CopyInfo*> copies_out;
  std::set<int> partition_indices;
  for (const PartitionInfo& partition : report.partitions)
    partition_indices.insert(partition.index);
  for (const CopyInfo& copy : report.copies) {
    if (partition_indices.count(copy.to_partition)) {
      copies_into[copy.to_partition].push_back(&copy);
    } else {
      copies_out.push_back(&copy);
    }
  }
  for (const PartitionInfo& partition : report.partitions) {
    out += copies_band(copies_into[partition.index],
                       "into partition " + std::to_string(partition.index));
    out += fmt::format(
        "<details class=\"partition\" open style=\"--c:{}\"><summary>partition {} — {}"
        "<span class=\"muted\">{} · estimated {} µs</span></summary>\n<div class=\"chips\">",
        colours.at(partition.device), partition.index, html_escape(partition.device),
        count_of(partition.nodes.size(), "node", "nodes"), format_us(partition.estimated_us));
    for (const std::string& name : partition.nodes) {
      auto it = row_of.find(name);
      if (it == row_of.end()) {
        out += fmt::format("<span class=\"chip\" style=\"--c:#ffffff\"><b>{}</b></span>",
                           html_escape(name));
        continue;
      }
      const NodeDecision& node = report.nodes[it->second];
      std::string badge = *cause_badge(node.cause) ? fmt::format("<span class=\"badge\">{}</span>",
                                                                 cause_badge(node.cause))
                                                   : "";
      out += fmt::format(
          "<a class=\"chip {5}\" href=\"#node-{0}\" data-row=\"{0}\" style=\"--c:{1}\" "
          "title=\"{2} ({3}) on {4}&#10;{5}: {6}\">{7}<b><bdi dir=\"ltr\">{2}</bdi></b><i>{3}</i>"
          "</a>",
          it->second, colours.at(node.device), html_escape(node.node), html_escape(node.op),
          html_escape(node.device), cause_name(node.cause), html_escape(full_reason(node)), badge);
    }
    out += "</div>\n</details>\n";
  }
  if (report.partitions.empty()) out += "<p class=\"muted\">No partitions.</p>\n";
  if (!copies_out.empty()) out += copies_band(copies_out, "back to the host");
  out += "</section>\n";

  // The per-node table; the script below filters and sorts its rows in place.
  out += "<section>\n<h2>Nodes</h2>\n<div class=\"controls\">";
  out += "<input id=\"filter-text\" type=\"search\" placeholder=\"filter: name, op, reason…\">";
  out += "<select id=\"filter-device\"><option value=\"\">all devices</option>" +
         filter_options(device_counts) + "</select>";
  out += "<select id=\"filter-cause\"><option value=\"\">all causes</option>" +
         filter_options(cause_counts) + "</select>";
  out += fmt::format("<span id=\"filter-count\" class=\"muted\">{}</span></div>\n",
                     count_of(report.nodes.size(), "node", "nodes"));
  out +=
      "<table id=\"node-table\"><thead><tr><th class=\"num\">#</th><th>node</th><th>op</th>"
      "<th>device</th><th class=\"num\">partition</th><th>cause</th><th>reason</th></tr>"
      "</thead>\n<tbody>\n";
  for (size_t i = 0; i < report.nodes.size(); ++i) {
    const NodeDecision& node = report.nodes[i];
    std::string reason = full_reason(node);
    std::string search = node.node + " " + node.op + " " + reason;
    std::transform(search.begin(), search.end(), search.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    out += fmt::format(
        "<tr id=\"node-{0}\" data-index=\"{0}\" data-device=\"{1}\" data-cause=\"{2}\" "
        "data-search=\"{3}\"><td class=\"num\">{0}</td><td class=\"name\">{4}</td><td>{5}</td>"
        "<td class=\"device\"><span class=\"swatch\" style=\"background:{6}\"></span> {1}</td>"
        "<td class=\"num\" data-key=\"{7}\">{8}</td><td class=\"cause-{2}\">{2}</td>"
        "<td>{9}</td></tr>\n",
        i, html_escape(node.device), cause_name(node.cause), html_escape(search),
        html_escape(node.node), html_escape(node.op), colours.at(node.device), node.partition,
        partition_label(node.partition, "-"), html_escape(reason));
  }
  out += "</tbody></table>\n</section>\n";

  if (!report.copies.empty()) {
    out +=
        "<section>\n<h2>Copies</h2>\n<table><thead><tr><th>value</th><th>from</th><th>to</th>"
        "<th class=\"num\">bytes</th></tr></thead>\n<tbody>\n";
    for (const CopyInfo& copy : report.copies) {
      out += fmt::format(
          "<tr><td class=\"name\">{}</td><td>{} ({})</td><td>{} ({})</td>"
          "<td class=\"num\">{}</td></tr>\n",
          html_escape(copy.value), html_escape(copy.from_device),
          copy.from_partition < 0 ? "graph input"
                                  : "partition " + std::to_string(copy.from_partition),
          html_escape(copy.to_device),
          copy.to_partition < 0 ? "graph output" : "partition " + std::to_string(copy.to_partition),
          bytes_text(copy.bytes));
    }
    out += "</tbody></table>\n</section>\n";
  }

  // Control dependencies: each orders a node after another without moving data.
  std::map<std::string, int> partition_of;
  for (const NodeDecision& node : report.nodes) partition_of[node.node] = node.partition;
  std::string control_rows;
  for (const EdgeInfo& edge : report.edges) {
    if (!edge.control) continue;
    control_rows += fmt::format(
        "<tr class=\"control\"><td class=\"name\">{}</td><td class=\"name\">{}</td>"
        "<td class=\"num\">{} → {}</td><td>none (control)</td></tr>\n",
        html_escape(edge.to_node), html_escape(edge.from_node),
        partition_label(partition_of[edge.from_node], "-"),
        partition_label(partition_of[edge.to_node], "-"));
  }
  if (!control_rows.empty()) {
    out +=
        "<section>\n<h2>Control dependencies</h2>\n<table><thead><tr><th>node</th>"
        "<th>runs after</th><th class=\"num\">partitions</th><th>data</th></tr></thead>\n"
        "<tbody>\n" +
        control_rows + "</tbody></table>\n</section>\n";
  }

  out += "</main>\n<script type=\"application/json\" id=\"placement-report\">\n" +
         script_safe_json(report_json(report)) + "\n</script>\n<script>" +
         std::string(kHtmlScript) + "</script>\n</body>\n</html>\n";
  return out;
}

std::string format_report(const PlacementReport& report, const std::string& format) {
  if (format == "text") return format_text(report);
  if (format == "json") return format_json(report);
  if (format == "dot") return format_dot(report);
  if (format == "html") return format_html(report);
  SY_THROW(InvalidArgument, "--format '{}': expected text, json, dot or html", format);
}

}  // namespace switchyard::tooling
