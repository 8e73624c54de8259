#include "vision/model_registry.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/assets.h"
#include "core/sha256.h"

#if VEIL_HAVE_EMBEDDED_MODEL
extern "C" const unsigned char veil_embedded_yunet[];
extern "C" const unsigned char veil_embedded_yunet_end[];
#endif
#ifndef VEIL_DATA_DIR
#define VEIL_DATA_DIR "/usr/local/share/veil/models"
#endif

namespace veil {
namespace fs = std::filesystem;

const std::vector<ModelSpec>& KnownModels() {
  static const std::vector<ModelSpec> k = {
      {"yunet", "face_detection_yunet_2023mar.onnx",
       "8f2383e4dd3cfbb4553ea8718107fc0423210dc964f9f4280604804ed2552fa4", 0, 0, true},
      {"ultraface", "version-RFB-320.onnx",
       "34cd7e60aeff28744c657de7a3dc64e872d506741de66987f3426f2b79f88017", 320, 240, true},
      {"ultraface", "version-RFB-640.onnx",
       "8f4c659275977e7a3bfbfa339a9c769ad793df50f9c0baa8c14b11baa1646430", 640, 480, false},
  };
  return k;
}

const ModelSpec* FindModelBySha(const std::string& sha) {
  for (const auto& m : KnownModels())
    if (m.sha256 == sha) return &m;
  return nullptr;
}

namespace {
Result<std::vector<unsigned char>> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot open model file " + path);
  std::vector<unsigned char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::Error("read error on model file " + path);
  return b;
}

// Verifies bytes against the expected sha (or the family's known models).
Result<ModelSpec> Verify(const std::string& family, const std::vector<unsigned char>& bytes,
                         const std::string& expected, const std::string& where) {
  const std::string sha = Sha256Hex(bytes.data(), bytes.size());
  if (!expected.empty()) {
    if (sha != expected)
      return Status::Error("model " + where + " has sha256 " + sha + ", expected " + expected);
    if (const ModelSpec* m = FindModelBySha(sha); m && m->family != family)
      return Status::Error("model " + where + " is a " + m->family + " model, not " + family);
    const ModelSpec* known = FindModelBySha(sha);
    return known ? *known : ModelSpec{family, fs::path(where).filename().string(), sha, 0, 0, false};
  }
  const ModelSpec* m = FindModelBySha(sha);
  if (!m || m->family != family) {
    std::string want;
    for (const auto& k : KnownModels())
      if (k.family == family) want += "\n  " + k.file + "  " + k.sha256;
    return Status::Error("model " + where + " has sha256 " + sha + ", which is not a known " + family +
                         " model; expected one of:" + want +
                         "\n(pass --model-sha256 to use a different model on purpose)");
  }
  return *m;
}
}  // namespace

Result<ResolvedModel> ResolveModel(const std::string& family, const std::string& explicit_path,
                                   const std::string& expected_sha256) {
  const ModelSpec* def = nullptr;
  for (const auto& m : KnownModels())
    if (m.family == family && m.is_default) def = &m;
  if (!def) return Status::Error("unknown detector '" + family + "' (expected yunet or ultraface)");

  auto from_file = [&](const std::string& path, const std::string& source) -> Result<ResolvedModel> {
    auto bytes = ReadAll(path);
    if (!bytes) return bytes.status();
    if (bytes->empty()) return Status::Error("model file " + path + " is empty");
    auto spec = Verify(family, *bytes, expected_sha256, path);
    if (!spec) return spec.status();
    return ResolvedModel{path, source, std::move(*bytes), *spec};
  };

  if (!explicit_path.empty()) {
    if (!fs::is_regular_file(explicit_path)) return Status::Error("model file not found: " + explicit_path);
    return from_file(explicit_path, "--model");
  }
  std::vector<std::pair<std::string, std::string>> dirs;
  if (const char* e = std::getenv("VEIL_MODEL_DIR"); e && *e) dirs.push_back({e, "$VEIL_MODEL_DIR"});
  dirs.push_back({VEIL_DATA_DIR, "data dir"});
  dirs.push_back({AssetsDir() + "/models", "assets dir"});
  std::string tried;
  for (const auto& [dir, source] : dirs) {
    const std::string p = dir + "/" + def->file;
    tried += "\n  " + p;
    if (fs::is_regular_file(p)) return from_file(p, source);
  }
#if VEIL_HAVE_EMBEDDED_MODEL
  if (family == "yunet") {
    std::vector<unsigned char> b(veil_embedded_yunet, veil_embedded_yunet_end);
    auto spec = Verify(family, b, expected_sha256, "(embedded)");
    if (!spec) return spec.status();
    return ResolvedModel{"", "embedded", std::move(b), *spec};
  }
#endif
  return Status::Error("model " + def->file + " not found; looked in:" + tried +
                       "\nSee README 'Models' for where to get it, or pass --model PATH.");
}

}  // namespace veil
