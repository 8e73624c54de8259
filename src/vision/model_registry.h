// Known detector models: file names, sha256 and where veil looks for them.
#pragma once
#include <string>
#include <vector>

#include "core/status.h"

namespace veil {

struct ModelSpec {
  std::string family;   // yunet | ultraface
  std::string file;     // canonical file name
  std::string sha256;
  int input_w = 0, input_h = 0;  // fixed input size (0 = any multiple of 32)
  bool is_default = false;       // default file of its family
};

const std::vector<ModelSpec>& KnownModels();
const ModelSpec* FindModelBySha(const std::string& sha);

struct ResolvedModel {
  std::string path;              // empty when embedded
  std::string source;            // human-readable: "--model", "$VEIL_MODEL_DIR", ..., "embedded"
  std::vector<unsigned char> bytes;  // model bytes (read and verified)
  ModelSpec spec;
};

// Order: explicit path, $VEIL_MODEL_DIR, the installed data dir,
// <assets>/models (development default), then the embedded YuNet.
Result<ResolvedModel> ResolveModel(const std::string& family, const std::string& explicit_path,
                                   const std::string& expected_sha256);

}  // namespace veil
