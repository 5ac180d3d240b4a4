// Model::save_onnx: a model's graph (loaded or built) written back as an ONNX file through the
// exporter saved executables use (onnx/export.h).
#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "ir/check.h"
#include "onnx/export.h"
#include "switchyard/switchyard.hpp"

namespace switchyard {

namespace {

constexpr const char* kSwitchyardDomain = "ai.switchyard";

// Checks that every node of `graph` (and its subgraphs) can be written as an ONNX NodeProto,
// and collects the non-default domains the nodes use with the opset each is imported at.
void collect_domains(const ir::Graph& graph, const std::map<std::string, int64_t>& known,
                     std::map<std::string, int64_t>& domains) {
  for (const ir::Value* v : graph.inputs())
    SY_CHECK(!v->name().empty(), InvalidArgument,
             "save_onnx: graph '{}' has an input without a name", graph.name());
  for (const ir::Value* v : graph.outputs())
    SY_CHECK(!v->name().empty(), InvalidArgument,
             "save_onnx: graph '{}' has an output without a name", graph.name());
  for (const auto& node : graph.nodes()) {
    for (const ir::Value* v : node->inputs())
      SY_CHECK(v == nullptr || !v->name().empty(), InvalidArgument,
               "save_onnx: {} reads a value without a name, which ONNX cannot refer to",
               node->describe());
    for (const ir::Value* v : node->outputs())
      SY_CHECK(v == nullptr || !v->name().empty(), InvalidArgument,
               "save_onnx: {} makes a value without a name, which ONNX cannot refer to",
               node->describe());
    const std::string& domain = node->domain();
    if (!domain.empty() && domain != "ai.onnx") {
      auto it = known.find(domain);
      SY_CHECK(it != known.end() || domain == kSwitchyardDomain, Unsupported,
               "save_onnx: {} is of domain '{}', whose opset version is unknown", node->describe(),
               domain);
      domains[domain] = it != known.end() ? it->second : 1;
    }
    for (const ir::Graph* sub : node->subgraphs()) collect_domains(*sub, known, domains);
  }
}

}  // namespace

void Model::save_onnx(const std::string& path) const {
  translate_std_exceptions(fmt::format("saving the model '{}' as ONNX", path), [&] {
    SY_CHECK(graph_ != nullptr, InvalidArgument,
             "save_onnx '{}': the model was already compiled (its graph moved into the "
             "executable)",
             path);
    std::map<std::string, int64_t> domains;
    collect_domains(*graph_, opsets_, domains);
    std::string bytes = onnx_import::export_model(*graph_);
    if (!domains.empty()) {
      // Serialized messages concatenate as a merge: this appends the opset imports.
      onnx::ModelProto extra;
      for (const auto& [domain, version] : domains) {
        onnx::OperatorSetIdProto* opset = extra.add_opset_import();
        opset->set_domain(domain);
        opset->set_version(version);
      }
      bytes += extra.SerializeAsString();
    }

    // Written beside the target and renamed, so a reader sees the old file or the whole new one.
    std::filesystem::path target(path);
    std::filesystem::path tmp = target;
    static std::atomic<uint64_t> serial{0};
    tmp += fmt::format(".tmp.{}.{}", ::getpid(), serial.fetch_add(1));
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    SY_CHECK(out.good(), InvalidArgument, "save_onnx '{}': cannot write '{}'", path, tmp.string());
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    std::error_code ec;
    if (!out.good()) {
      std::filesystem::remove(tmp, ec);
      SY_THROW(InvalidArgument, "save_onnx '{}': writing '{}' failed (disk full?)", path,
               tmp.string());
    }
    std::filesystem::rename(tmp, target, ec);
    if (ec) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      SY_THROW(InvalidArgument, "save_onnx '{}': cannot rename the written file into place: {}",
               path, ec.message());
    }
    return 0;
  });
}

}  // namespace switchyard
