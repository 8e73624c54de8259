#include "cli/options.h"

#include <charconv>
#include <cstdio>

namespace veil::cli {

void Fail(int* rc, int code, const std::string& message) {
  std::fprintf(stderr, "veil: %s\n", message.c_str());
  *rc = code;
}

Result<cv::Size> ParseSize(const std::string& s) {
  const auto x = s.find('x');
  int w = 0, h = 0;
  if (x == std::string::npos) return Status::Error("size must look like WxH, got '" + s + "'");
  auto r1 = std::from_chars(s.data(), s.data() + x, w);
  auto r2 = std::from_chars(s.data() + x + 1, s.data() + s.size(), h);
  if (r1.ec != std::errc() || r1.ptr != s.data() + x || r2.ec != std::errc() || r2.ptr != s.data() + s.size())
    return Status::Error("size must look like WxH, got '" + s + "'");
  if (w < 32 || h < 32 || w > 4096 || h > 4096)
    return Status::Error("size " + s + " out of range (32x32 .. 4096x4096)");
  return cv::Size(w, h);
}

void AddDetectorOptions(CLI::App& app, DetectorConfig& d) {
  app.add_option("--detector", d.family, "Detector family: yunet (default) or ultraface")
      ->check(CLI::IsMember({"yunet", "ultraface"}));
  app.add_option("--model", d.model_path, "Model file (default: $VEIL_MODEL_DIR, data dir, assets, embedded)");
  app.add_option("--model-sha256", d.model_sha256, "Accept a model file with this sha256 (custom models)");
  app.add_option("--threads", d.threads, "Inference threads")->check(CLI::Range(1, 256));
}

void AddPrivacyOptions(CLI::App& app, PrivacyOptions& o, const std::string& size_flag) {
  app.add_option("--mode", o.mode, "anonymize | bypass | full_blur")
      ->check(CLI::IsMember({"anonymize", "bypass", "full_blur"}));
  AddDetectorOptions(app, o.detector);
  app.add_option(size_flag, o.detect_size, "Box the detection copy fits in, WxH (aspect kept)");
  app.add_option("--detect-every", o.detect_every, "Detect every N frames, or 'auto' (by CPU budget)");
  app.add_option("--detect-budget", o.detect_budget_ms, "--detect-every auto: detection ms per frame to aim for");
  app.add_option("--cell", o.cell, "Mosaic cell: 'auto' (adaptive to face size) or fixed px");
  app.add_option("--cells-across", o.cells_across, "Adaptive mosaic: cells across a face");
  app.add_option("--min-cell", o.min_cell, "Adaptive mosaic: smallest cell, px");
  app.add_option("--full-cell", o.full_cell, "Cell of whole-frame mosaic (full_blur, fail-closed), px");
  app.add_option("--margin", o.margin, "Grow each face box by this fraction per side");
  app.add_option("--score", o.score, "Detection score that starts a track");
  app.add_option("--low-score", o.low_score, "Lowest detection score kept (matched to tracks, masked)");
  app.add_option("--max-age-ms", o.max_age_ms, "Older detection result -> whole-frame mosaic (fail-closed)");
  app.add_option("--max-coast", o.max_coast, "Frames a track survives without a detection (0 = masks only where detected)");
  app.add_flag("--no-scene-cut", o.no_scene_cut, "Do not force detection on scene cuts");
}

void AddEncodeOptions(CLI::App& app, EncodeOptions& o) {
  app.add_option("--codec", o.enc.codec, "vp8 | h264 | rawvideo (default: from the output extension)")
      ->check(CLI::IsMember({"vp8", "h264", "rawvideo"}));
  app.add_option("--bitrate", o.enc.bitrate_kbps, "Video bitrate, kbps (default: by resolution)");
  app.add_option("--encode-threads", o.enc.threads, "Encoder threads")->check(CLI::Range(1, 64));
  app.add_option("--decode-threads", o.decode_threads, "Decoder threads")->check(CLI::Range(1, 64));
  app.add_option("--keyint", o.enc.keyint_frames, "Keyframe at least every N frames")->check(CLI::Range(1, 10000));
}

Result<PrivacyConfig> PrivacyOptions::Build() const {
  PrivacyConfig c;
  auto m = ParseMode(mode);
  if (!m) return m.status();
  c.mode = *m;
  auto sz = ParseSize(detect_size);
  if (!sz) return sz.status();
  c.detect_box = *sz;
  if (detect_every == "auto") {
    c.detect_every = 0;
  } else {
    int n = 0;
    auto r = std::from_chars(detect_every.data(), detect_every.data() + detect_every.size(), n);
    if (r.ec != std::errc() || r.ptr != detect_every.data() + detect_every.size() || n < 1 || n > 120)
      return Status::Error("--detect-every must be 'auto' or an integer in [1, 120], got '" + detect_every + "'");
    c.detect_every = n;
  }
  if (cell != "auto") {
    int n = 0;
    auto r = std::from_chars(cell.data(), cell.data() + cell.size(), n);
    if (r.ec != std::errc() || r.ptr != cell.data() + cell.size())
      return Status::Error("--cell must be 'auto' or a pixel count, got '" + cell + "'");
    if (n == 0) return Status::Error("--cell 0 is degenerate: use 'auto' or a pixel count >= 4");
    c.mosaic.fixed_cell = n;
  }
  c.mosaic.cells_across = cells_across;
  c.mosaic.min_cell = min_cell;
  c.mosaic.full_frame_cell = full_cell;
  c.mosaic.margin = margin;
  c.tracker.high_score = score;
  c.tracker.low_score = low_score;
  c.max_result_age_ms = max_age_ms;
  c.detect_budget_ms = detect_budget_ms;
  c.tracker.max_coast_frames = max_coast;
  c.tracker.tentative_frames = std::min(c.tracker.tentative_frames, max_coast);
  c.scene_cut = !no_scene_cut;
  if (Status s = Validate(c); !s) return s;
  if (Status s = Validate(detector); !s) return s;
  return c;
}

}  // namespace veil::cli
