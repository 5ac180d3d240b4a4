// Tests for PlacementReport's renderings (summary, text, JSON, DOT, HTML) and for the Chrome
// trace of profiler events, on hand-built reports.
#include "tooling/report_format.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/profiler.h"
#include "tooling/trace.h"

namespace switchyard::tooling {
namespace {

using namespace placement;  // the report model under test

using nlohmann::json;

size_t count_occurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

NodeDecision decision(std::string name, std::string op, std::string device, Cause cause,
                      int partition, std::string reason = "") {
  NodeDecision node;
  node.node = std::move(name);
  node.op = std::move(op);
  node.device = std::move(device);
  node.cause = cause;
  node.partition = partition;
  node.reason = std::move(reason);
  return node;
}

/// sim:0 runs everything but two NonMaxSuppression nodes; one pin, one island, four copies.
PlacementReport detection_report() {
  PlacementReport report;
  report.model = "detector.onnx";
  report.target = "sim:0";
  report.devices = {"sim:0", "cpu"};
  report.policy = "compute_units=all fallback=allow";
  report.nodes = {
      decision("conv1", "Conv", "sim:0", Cause::Preferred, 0, "the target device"),
      decision("relu1", "Relu", "sim:0", Cause::Preferred, 0, "the target device"),
      decision("nms_a", "NonMaxSuppression", "cpu", Cause::Unsupported, 1,
               "not supported on sim:0"),
      decision("nms_b", "NonMaxSuppression", "cpu", Cause::Unsupported, 1,
               "not supported on sim:0"),
      decision("gather", "Gather", "sim:0", Cause::Pinned, 2, "--pin gather=sim:0"),
      decision("add", "Add", "sim:0", Cause::Island, 2, "merged into its neighbours' partition"),
      decision("softmax", "Softmax", "sim:0", Cause::Preferred, 2, "the target device"),
  };
  report.nodes[5].copy_cost_us = 12.5;
  report.nodes[5].saving_us = 3.25;
  report.partitions = {{0, "sim:0", {"conv1", "relu1"}, 40.0},
                       {1, "cpu", {"nms_a", "nms_b"}, 120.0},
                       {2, "sim:0", {"gather", "add", "softmax"}, 15.5}};
  report.copies = {{"image", "cpu", "sim:0", -1, 0, 602112},
                   {"relu1_out", "sim:0", "cpu", 0, 1, -1},
                   {"boxes", "cpu", "sim:0", 1, 2, 4096},
                   {"scores", "sim:0", "cpu", 2, -1, 40}};
  report.edges = {{"conv1", "relu1", "conv1_out", false}, {"relu1", "nms_a", "relu1_out", true},
                  {"nms_a", "nms_b", "nms_a_out", false}, {"nms_b", "gather", "boxes", true},
                  {"gather", "add", "gathered", false},   {"add", "softmax", "sum", false}};
  return report;
}

TEST(PlacementReportTest, CauseNamesMatchTheDocumentedCodes) {
  EXPECT_STREQ(cause_name(Cause::Pinned), "pinned");
  EXPECT_STREQ(cause_name(Cause::Unsupported), "unsupported");
  EXPECT_STREQ(cause_name(Cause::HostShape), "host_shape");
  EXPECT_STREQ(cause_name(Cause::Preferred), "preferred");
  EXPECT_STREQ(cause_name(Cause::Split), "split");
  EXPECT_STREQ(cause_name(Cause::Island), "island");
}

TEST(PlacementReportTest, SummaryCountsDevicesCausesCopiesAndGroupsReasons) {
  EXPECT_EQ(detection_report().summary(),
            "sim:0: 5 of 7 nodes in 2 partitions; cpu: 2 nodes; 1 pinned, 1 island; 4 copies — "
            "NonMaxSuppression: not supported on sim:0");
}

TEST(PlacementReportTest, SummaryListsDevicesInOrderOfFirstUseWithDistinctReasons) {
  PlacementReport report;
  report.target = "sim:1";
  report.nodes = {
      decision("shape", "Shape", "cpu", Cause::HostShape, 0, "shape computation"),
      decision("topk", "TopK", "cpu", Cause::Unsupported, 0, "no int64 kernel on sim:1"),
      decision("mm", "MatMul", "sim:1", Cause::Preferred, 1),
      decision("nz", "NonZero", "cpu", Cause::Unsupported, 2, "not supported on sim:1"),
      decision("topk2", "TopK", "cpu", Cause::Unsupported, 2, "no int64 kernel on sim:1"),
      decision("topk3", "TopK", "cpu", Cause::Unsupported, 2, "k is not a constant"),
  };
  report.partitions = {{0, "cpu", {"shape", "topk"}, 1},
                       {1, "sim:1", {"mm"}, 2},
                       {2, "cpu", {"nz", "topk2", "topk3"}, 3}};
  report.copies = {{"v", "cpu", "sim:1", 0, 1, 8}};
  EXPECT_EQ(report.summary(),
            "cpu: 5 nodes; sim:1: 1 of 6 nodes in 1 partition; 1 host_shape; 1 copy — "
            "TopK: no int64 kernel on sim:1; NonZero: not supported on sim:1; "
            "TopK: k is not a constant");
}

TEST(PlacementReportTest, SummaryNamesATargetThatRunsNothing) {
  PlacementReport report;
  report.target = "sim:0";
  report.nodes = {
      decision("nms", "NonMaxSuppression", "cpu", Cause::Unsupported, 0, "not supported on sim:0")};
  report.partitions = {{0, "cpu", {"nms"}, 1}};
  EXPECT_EQ(report.summary(),
            "sim:0: 0 of 1 node; cpu: 1 node — NonMaxSuppression: not supported on sim:0");
}

TEST(PlacementReportTest, SummaryTreatsEveryDeviceOfASplitTargetAsTarget) {
  PlacementReport report;
  report.target = "cuda:0,cuda:1";
  report.nodes = {decision("a", "MatMul", "cuda:0", Cause::Split, 0),
                  decision("b", "MatMul", "cuda:0", Cause::Split, 0),
                  decision("c", "MatMul", "cuda:1", Cause::Split, 1)};
  report.partitions = {{0, "cuda:0", {"a", "b"}, 1}, {1, "cuda:1", {"c"}, 1}};
  report.copies = {{"b_out", "cuda:0", "cuda:1", 0, 1, 1024}};
  EXPECT_EQ(report.summary(),
            "cuda:0: 2 of 3 nodes in 1 partition; cuda:1: 1 of 3 nodes in 1 partition; 1 copy");
}

TEST(PlacementReportTest, TextHasSummaryAlignedTablePartitionsAndCopies) {
  std::string text = format_text(detection_report());
  std::istringstream lines(text);
  std::string summary, meta, blank, header, first_row;
  std::getline(lines, summary);
  std::getline(lines, meta);
  std::getline(lines, blank);
  std::getline(lines, header);
  std::getline(lines, first_row);
  EXPECT_EQ(summary, detection_report().summary());
  EXPECT_NE(meta.find("policy: compute_units=all fallback=allow"), std::string::npos);
  EXPECT_EQ(header.rfind("node", 0), 0u);
  EXPECT_EQ(first_row.rfind("conv1", 0), 0u);
  // Columns align: "cause" in the header starts where "preferred" starts in the first row.
  EXPECT_EQ(header.find("cause"), first_row.find("preferred"));
  EXPECT_EQ(header.find("reason"), first_row.find("the target device"));
  // Islands show both estimates.
  EXPECT_NE(text.find("12.5 µs"), std::string::npos);
  EXPECT_NE(text.find("3.2 µs"), std::string::npos);
  EXPECT_NE(text.find("\npartitions\n"), std::string::npos);
  EXPECT_NE(text.find("120.0"), std::string::npos);
  EXPECT_NE(text.find("cpu → sim:0"), std::string::npos);
  EXPECT_NE(text.find("input → 0"), std::string::npos);
  EXPECT_NE(text.find("2 → output"), std::string::npos);
  EXPECT_NE(text.find("602112"), std::string::npos);
  // The copy of relu1_out has a symbolic size.
  size_t row = text.find("  relu1_out");
  ASSERT_NE(row, std::string::npos);
  std::string copy_row = text.substr(row, text.find('\n', row) - row);
  EXPECT_EQ(copy_row.back(), '?');
}

TEST(PlacementReportTest, TextStatesIslandEstimatesOnce) {
  PlacementReport report = detection_report();
  report.nodes[5].reason =
      "island of 1 node moved from sim:0: copies would cost 12.5 us, "
      "running there saves 3.2 us";
  std::string text = format_text(report);
  EXPECT_EQ(count_occurrences(text, "12.5"), 1u);
  EXPECT_EQ(count_occurrences(format_html(report), "running there saves 3.2 us ("), 0u);
}

TEST(PlacementReportTest, JsonFollowsTheDocumentedSchema) {
  json doc = json::parse(format_json(detection_report()));
  EXPECT_EQ(doc["schema"], "switchyard.placement/1");
  EXPECT_EQ(doc["model"], "detector.onnx");
  EXPECT_EQ(doc["target"], "sim:0");
  EXPECT_EQ(doc["devices"], json({"sim:0", "cpu"}));
  EXPECT_EQ(doc["policy"], "compute_units=all fallback=allow");
  EXPECT_EQ(doc["summary"], detection_report().summary());

  ASSERT_EQ(doc["nodes"].size(), 7u);
  const json& nms = doc["nodes"][2];
  EXPECT_EQ(nms["name"], "nms_a");
  EXPECT_EQ(nms["op"], "NonMaxSuppression");
  EXPECT_EQ(nms["device"], "cpu");
  EXPECT_EQ(nms["cause"], "unsupported");
  EXPECT_EQ(nms["reason"], "not supported on sim:0");
  EXPECT_EQ(nms["partition"], 1);
  EXPECT_FALSE(nms.contains("copy_cost_us"));
  EXPECT_FALSE(nms.contains("saving_us"));
  const json& island = doc["nodes"][5];
  EXPECT_EQ(island["cause"], "island");
  EXPECT_DOUBLE_EQ(island["copy_cost_us"].get<double>(), 12.5);
  EXPECT_DOUBLE_EQ(island["saving_us"].get<double>(), 3.25);

  ASSERT_EQ(doc["partitions"].size(), 3u);
  EXPECT_EQ(doc["partitions"][1]["index"], 1);
  EXPECT_EQ(doc["partitions"][1]["device"], "cpu");
  EXPECT_EQ(doc["partitions"][1]["nodes"], json({"nms_a", "nms_b"}));
  EXPECT_DOUBLE_EQ(doc["partitions"][2]["estimated_us"].get<double>(), 15.5);

  ASSERT_EQ(doc["copies"].size(), 4u);
  const json& input = doc["copies"][0];
  EXPECT_EQ(input["value"], "image");
  EXPECT_EQ(input["from"], "cpu");
  EXPECT_EQ(input["to"], "sim:0");
  EXPECT_TRUE(input["from_partition"].is_null());
  EXPECT_EQ(input["to_partition"], 0);
  EXPECT_EQ(input["bytes"], 602112);
  EXPECT_TRUE(doc["copies"][1]["bytes"].is_null());
  EXPECT_TRUE(doc["copies"][3]["to_partition"].is_null());

  ASSERT_EQ(doc["edges"].size(), 6u);
  EXPECT_EQ(doc["edges"][1], json({{"from", "relu1"},
                                   {"to", "nms_a"},
                                   {"value", "relu1_out"},
                                   {"copy", true},
                                   {"control", false}}));
}

TEST(PlacementReportTest, DotHasOneClusterPerPartitionAndDashedCopyEdges) {
  PlacementReport report = detection_report();
  report.nodes[0].node = "conv\"1\\x";
  report.partitions[0].nodes[0] = report.nodes[0].node;
  report.edges[0].from_node = report.nodes[0].node;
  std::string dot = format_dot(report);
  EXPECT_EQ(dot.rfind("digraph placement {", 0), 0u);
  EXPECT_NE(dot.find("rankdir=TB;"), std::string::npos);
  EXPECT_EQ(count_occurrences(dot, "subgraph cluster_"), 3u);
  EXPECT_NE(dot.find("subgraph cluster_1 {"), std::string::npos);
  EXPECT_NE(dot.find("label=\"partition 1 — cpu\""), std::string::npos);
  EXPECT_EQ(count_occurrences(dot, "style=dashed"), 2u);
  EXPECT_NE(dot.find("\"relu1\" -> \"nms_a\" [style=dashed"), std::string::npos);
  EXPECT_NE(dot.find("label=\"relu1_out\""), std::string::npos);
  EXPECT_NE(dot.find("\"nms_a\" -> \"nms_b\";"), std::string::npos);
  EXPECT_NE(dot.find("\"conv\\\"1\\\\x\" -> \"relu1\";"), std::string::npos);
  EXPECT_NE(dot.find("label=\"nms_a\\nNonMaxSuppression\\nunsupported\""), std::string::npos);
  // Nodes on one device share a fill colour; the two devices differ.
  auto fill_of = [&](const std::string& name) {
    size_t at = dot.find("\"" + name + "\" [label=");
    size_t fill = dot.find("fillcolor=", at);
    return dot.substr(fill, dot.find(',', fill) - fill);
  };
  EXPECT_EQ(fill_of("relu1"), fill_of("softmax"));
  EXPECT_NE(fill_of("relu1"), fill_of("nms_a"));
}

TEST(PlacementReportTest, HtmlIsSelfContainedAndEscapesNames) {
  PlacementReport report = detection_report();
  report.nodes[0].node = "<script>";
  report.nodes[1].node = "</script><script>alert(1)</script>";
  report.nodes[1].reason = "a & b \"quoted\"";
  report.partitions[0].nodes = {report.nodes[0].node, report.nodes[1].node};
  std::string html = format_html(report);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  // Only the page's own two script elements: the JSON block and the table script.
  EXPECT_EQ(count_occurrences(html, "<script"), 2u);
  EXPECT_EQ(count_occurrences(html, "</script>"), 2u);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("a &amp; b &quot;quoted&quot;"), std::string::npos);
  EXPECT_NE(html.find("<style>"), std::string::npos);
  // One box per partition, copies marked between them, one table row per node.
  EXPECT_EQ(count_occurrences(html, "<details class=\"partition\""), 3u);
  EXPECT_NE(html.find("copy <b>relu1_out</b> sim:0 &#8594; cpu"), std::string::npos);
  EXPECT_NE(html.find("copy <b>scores</b> sim:0 &#8594; cpu (40 B)"), std::string::npos);
  EXPECT_EQ(count_occurrences(html, "<tr id=\"node-"), 7u);
  // The embedded report parses back to the same names.
  const std::string open = "<script type=\"application/json\" id=\"placement-report\">";
  size_t begin = html.find(open);
  ASSERT_NE(begin, std::string::npos);
  begin += open.size();
  json doc = json::parse(html.substr(begin, html.find("</script>", begin) - begin));
  EXPECT_EQ(doc["nodes"][0]["name"], "<script>");
  EXPECT_EQ(doc["nodes"][1]["name"], "</script><script>alert(1)</script>");
}

}  // namespace
}  // namespace switchyard::tooling

namespace switchyard::tooling {
namespace {

using runtime::Profiler;

using nlohmann::json;

ProfileEvent event(std::string name, std::string op, std::string device, std::string category,
                   int64_t start_us, int64_t duration_us) {
  ProfileEvent e;
  e.name = std::move(name);
  e.op = std::move(op);
  e.device = std::move(device);
  e.category = std::move(category);
  e.start_us = start_us;
  e.duration_us = duration_us;
  return e;
}

TEST(ChromeTraceTest, OneTrackPerDeviceWithOnnxRuntimeFieldNames) {
  std::vector<ProfileEvent> events = {
      event("model_run", "", "sim:0", "Session", 0, 500),
      event("conv1", "Conv", "sim:0", "Node", 10, 120),
      event("copy relu1_out sim:0->cpu", "Copy", "cpu", "Copy", 140, 30),
      event("nms", "NonMaxSuppression", "cpu", "Node", 175, 200),
      event("softmax", "Softmax", "sim:0", "Node", 380, 17),
  };
  events[1].input_shapes = {"1x3x224x224", "64x3x7x7", ""};
  events[1].output_shapes = {"1x64x112x112"};
  events[3].input_shapes = {"scalar", "seq[3]"};
  json doc = json::parse(format_chrome_trace(events));
  ASSERT_TRUE(doc.contains("traceEvents"));
  const json& trace = doc["traceEvents"];

  std::map<int, std::string> track_names;
  std::string process_name;
  std::vector<json> complete;
  for (const json& e : trace) {
    if (e["ph"] == "M" && e["name"] == "thread_name") track_names[e["tid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "process_name") process_name = e["args"]["name"];
    if (e["ph"] == "X") complete.push_back(e);
  }
  EXPECT_EQ(process_name, "switchyard");
  EXPECT_EQ(track_names, (std::map<int, std::string>{{1, "sim:0"}, {2, "cpu"}}));
  ASSERT_EQ(complete.size(), events.size());

  std::map<std::string, std::set<int>> tids_of_device;
  for (const json& e : complete) {
    for (const char* field : {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"})
      EXPECT_TRUE(e.contains(field)) << field;
    for (const char* field : {"op_name", "provider", "input_type_shape", "output_type_shape"})
      EXPECT_TRUE(e["args"].contains(field)) << field;
    EXPECT_EQ(e["pid"], 1);
    tids_of_device[e["args"]["provider"]].insert(e["tid"].get<int>());
    EXPECT_EQ(track_names[e["tid"]], e["args"]["provider"]);
  }
  EXPECT_EQ(tids_of_device["sim:0"], std::set<int>{1});
  EXPECT_EQ(tids_of_device["cpu"], std::set<int>{2});

  const json& session = complete[0];
  EXPECT_EQ(session["cat"], "Session");
  EXPECT_EQ(session["dur"], 500);
  const json& conv = complete[1];
  EXPECT_EQ(conv["name"], "conv1");
  EXPECT_EQ(conv["cat"], "Node");
  EXPECT_EQ(conv["ts"], 10);
  EXPECT_EQ(conv["dur"], 120);
  EXPECT_EQ(conv["args"]["op_name"], "Conv");
  EXPECT_EQ(conv["args"]["provider"], "sim:0");
  EXPECT_EQ(conv["args"]["input_type_shape"],
            json::parse(R"([{"tensor":[1,3,224,224]},{"tensor":[64,3,7,7]},{"none":[]}])"));
  EXPECT_EQ(conv["args"]["output_type_shape"], json::parse(R"([{"tensor":[1,64,112,112]}])"));
  EXPECT_EQ(complete[2]["cat"], "Copy");
  EXPECT_EQ(complete[3]["args"]["input_type_shape"],
            json::parse(R"([{"tensor":[]},{"sequence":[3]}])"));
}

// A device that runs several partitions at once (the cpu, for runs in flight together) has a
// track per worker, so its overlapping events never share one.
TEST(ChromeTraceTest, EachWorkerOfADeviceHasItsOwnTrack) {
  std::vector<ProfileEvent> events = {
      event("a/matmul", "MatMul", "cpu", "Node", 0, 100),
      event("b/matmul", "MatMul", "cpu", "Node", 10, 100),
      event("c/matmul", "MatMul", "sim:0", "Node", 20, 100),
  };
  events[1].worker = 1;
  json doc = json::parse(format_chrome_trace(events));
  std::map<int, std::string> track_names;
  std::map<std::string, int> tid_of;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") track_names[e["tid"]] = e["args"]["name"];
    if (e["ph"] == "X") tid_of[e["name"]] = e["tid"];
  }
  EXPECT_EQ(track_names, (std::map<int, std::string>{{1, "cpu"}, {2, "cpu #2"}, {3, "sim:0"}}));
  EXPECT_EQ(tid_of["a/matmul"], 1);
  EXPECT_EQ(tid_of["b/matmul"], 2);
  EXPECT_EQ(tid_of["c/matmul"], 3);
}

TEST(ChromeTraceTest, NoEventsStillNamesTheProcess) {
  json doc = json::parse(format_chrome_trace({}));
  ASSERT_EQ(doc["traceEvents"].size(), 1u);
  EXPECT_EQ(doc["traceEvents"][0]["name"], "process_name");
}

}  // namespace
}  // namespace switchyard::tooling
