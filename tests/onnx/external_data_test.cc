// External tensor data: read when it stays inside the model's folder, refused otherwise.

#include <unistd.h>

#include "onnx_test_util.h"

namespace switchyard::onnx_test {
namespace {

const std::vector<float> kWeights = {0.5f, -1.25f, 3.0f, 1e-4f};

std::string weight_bytes() {
  return std::string(reinterpret_cast<const char*>(kWeights.data()),
                     kWeights.size() * sizeof(float));
}

// A model whose initializer `w` (float[4]) lives in external data with the given entries.
onnx::ModelProto model_with_external(const std::vector<std::pair<std::string, std::string>>& kv) {
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {"4"});
  auto* t = g->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : kv) {
    auto* entry = t->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  add_node(g, "Add", {"x", "w"}, {"y"});
  add_output(g, "y", onnx::TensorProto::FLOAT, {"4"});
  return m;
}

// Writes the model as <dir>/model/model.onnx and imports it from there.
std::unique_ptr<ir::Graph> import_from(const TempDir& dir, const onnx::ModelProto& m) {
  std::string path = dir.file("model/model.onnx");
  write_model(path, m);
  return onnx_import::import_model(path);
}

void expect_weights(const ir::Graph& graph) {
  const ir::Tensor& w = graph.find_value("w")->constant();
  ASSERT_EQ(w.numel(), 4);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(w.data<float>()[i], kWeights[static_cast<size_t>(i)]);
}

void expect_refused(const TempDir& dir, const onnx::ModelProto& m,
                    const std::vector<std::string>& parts) {
  std::vector<std::string> all = {"model '" + dir.file("model/model.onnx") + "'",
                                  "initializer 'w'"};
  all.insert(all.end(), parts.begin(), parts.end());
  expect_error([&] { import_from(dir, m); }, ErrorCode::InvalidModel, all);
}

TEST(OnnxExternalData, ReadsAtAnOffsetWithAndWithoutLength) {
  TempDir dir;
  write_bytes(dir.file("model/weights/w.bin"), "12345678" + weight_bytes() + "tail");
  expect_weights(*import_from(
      dir,
      model_with_external({{"location", "weights/w.bin"}, {"offset", "8"}, {"length", "16"}})));
  write_bytes(dir.file("model/rest.bin"), "abcd" + weight_bytes());
  expect_weights(
      *import_from(dir, model_with_external({{"location", "./rest.bin"}, {"offset", "4"}})));
  // `..` that stays inside the folder is fine.
  expect_weights(*import_from(
      dir, model_with_external(
               {{"location", "weights/../rest.bin"}, {"offset", "4"}, {"checksum", "ignored"}})));
}

TEST(OnnxExternalData, RefusesAbsolutePaths) {
  TempDir dir;
  write_bytes(dir.file("model/w.bin"), weight_bytes());
  expect_refused(dir, model_with_external({{"location", dir.file("model/w.bin")}}),
                 {"absolute path", dir.file("model/w.bin")});
}

TEST(OnnxExternalData, RefusesLeavingTheFolder) {
  TempDir dir;
  write_bytes(dir.file("outside.bin"), weight_bytes());
  expect_refused(dir, model_with_external({{"location", "../outside.bin"}}),
                 {"leaves the model's folder", "../outside.bin"});
  expect_refused(dir, model_with_external({{"location", "a/../../outside.bin"}}),
                 {"leaves the model's folder", "a/../../outside.bin"});
}

TEST(OnnxExternalData, RefusesSymlinksInsideTheFolder) {
  TempDir dir;
  write_bytes(dir.file("model/real/w.bin"), weight_bytes());
  ASSERT_EQ(::symlink("real/w.bin", dir.file("model/link.bin").c_str()), 0);
  ASSERT_EQ(::symlink("real", dir.file("model/linkdir").c_str()), 0);
  // The real file reads fine; a link to the same bytes, file or folder, does not.
  expect_weights(*import_from(dir, model_with_external({{"location", "real/w.bin"}})));
  expect_refused(dir, model_with_external({{"location", "link.bin"}}),
                 {"symlink 'link.bin'", "link.bin"});
  expect_refused(dir, model_with_external({{"location", "linkdir/w.bin"}}),
                 {"symlink 'linkdir'", "linkdir/w.bin"});
}

TEST(OnnxExternalData, RefusesRegionsPastTheEnd) {
  TempDir dir;
  write_bytes(dir.file("model/w.bin"), weight_bytes());
  expect_refused(dir,
                 model_with_external({{"location", "w.bin"}, {"offset", "4"}, {"length", "16"}}),
                 {"offset 4 + length 16 is past the end", "w.bin", "16 bytes"});
  expect_refused(dir, model_with_external({{"location", "w.bin"}, {"offset", "17"}}),
                 {"offset 17 is past the end", "w.bin"});
  // offset + length overflows 64 bits.
  expect_refused(dir,
                 model_with_external(
                     {{"location", "w.bin"}, {"offset", "8"}, {"length", "18446744073709551615"}}),
                 {"past the end", "w.bin"});
  expect_refused(dir, model_with_external({{"location", "w.bin"}, {"offset", "-1"}}),
                 {"offset '-1'", "w.bin"});
  // Without a length the rest of the file must be exactly the tensor.
  expect_refused(dir, model_with_external({{"location", "w.bin"}, {"offset", "4"}}),
                 {"holds 12 bytes at offset 4, expected 16", "w.bin"});
  expect_refused(dir,
                 model_with_external({{"location", "w.bin"}, {"offset", "0"}, {"length", "8"}}),
                 {"holds 8 bytes", "expected 16"});
}

TEST(OnnxExternalData, RefusesMissingFilesAndMissingLocations) {
  TempDir dir;
  expect_refused(dir, model_with_external({{"location", "nowhere.bin"}}),
                 {"cannot be found", "nowhere.bin"});
  expect_refused(dir, model_with_external({{"location", "sub/nowhere.bin"}}),
                 {"cannot be found", "sub/nowhere.bin"});
  expect_refused(dir, model_with_external({{"offset", "0"}}), {"no 'location'"});
  std::filesystem::create_directories(dir.file("model/folder.bin"));
  expect_refused(dir, model_with_external({{"location", "folder.bin"}}),
                 {"not a regular file", "folder.bin"});
}

TEST(OnnxExternalData, RefusedWhenImportedFromMemoryWithoutABaseFolder) {
  auto m = model_with_external({{"location", "w.bin"}});
  expect_error([&] { import_proto(m); }, ErrorCode::InvalidModel,
               {"model 'test.onnx'", "initializer 'w'", "'w.bin'", "without a base folder"});
  TempDir dir;
  write_bytes(dir.file("w.bin"), weight_bytes());
  std::string bytes = m.SerializeAsString();
  expect_weights(*onnx_import::import_model_from_bytes(bytes.data(), bytes.size(),
                                                       dir.path().string(), "mem.onnx"));
}

}  // namespace
}  // namespace switchyard::onnx_test
