// Command-line options shared by the subcommands that run the privacy path.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "core/status.h"
#include "media/media_types.h"
#include "privacy/privacy_stage.h"
#include "vision/detector.h"

namespace veil::cli {

struct PrivacyOptions {
  std::string mode = "anonymize";
  std::string detect_size = "640x360";
  std::string detect_every = "3";
  std::string cell = "auto";
  double cells_across = 8, margin = 0.2, max_age_ms = 200, detect_budget_ms = 5;
  int min_cell = 8, full_cell = 40, max_coast = 30;
  float score = 0.5f, low_score = 0.3f;
  bool no_scene_cut = false;
  DetectorConfig detector;
  // Builds the typed config; every value is validated, nothing is silently replaced.
  Result<PrivacyConfig> Build() const;
};

struct EncodeOptions {
  EncoderOptions enc;
  int decode_threads = 1;
};

void AddPrivacyOptions(CLI::App& app, PrivacyOptions& o, const std::string& size_flag = "--detect-size");
void AddDetectorOptions(CLI::App& app, DetectorConfig& d);
void AddEncodeOptions(CLI::App& app, EncodeOptions& o);
Result<cv::Size> ParseSize(const std::string& s);
// Prints "veil: <message>" on stderr and sets the process exit code.
void Fail(int* rc, int code, const std::string& message);

}  // namespace veil::cli
