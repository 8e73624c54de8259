// File in -> decode -> privacy stage -> encode -> file out, timed per stage.
#pragma once
#include <functional>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "media/reader.h"
#include "media/writer.h"
#include "privacy/privacy_stage.h"

namespace veil {

struct JobConfig {
  std::string input, output;
  PrivacyConfig privacy;
  EncoderOptions encoder;
  ReaderOptions reader;
  int64_t max_frames = 0;  // 0 = all
  // Each frame's work starts at its instant on the input's frame rate, as a live session's does
  // (`veil bench --paced`): the core idles between frames instead of running them back to back.
  bool paced = false;
  // Called with each frame's index and what the privacy stage did to it, before the frame is
  // encoded (`veil anonymize --masks-csv`). Optional.
  std::function<void(int64_t frame, const FrameReport&)> on_frame;
};

struct JobSummary {
  StageStats decode, preprocess, detect, track, mosaic, encode;
  double cpu_ms = 0, wall_ms = 0;
  int64_t frames = 0;
  PrivacyCounters privacy;
  int audio_copied = 0, audio_skipped = 0, audio_packets = 0;
  int every_final = 0;
  VideoInfo video;
  std::string codec_out;
  int64_t bytes_out = 0;
  Status input_status;   // not OK when the input was damaged (output still valid)
  double cpu_per_frame() const { return frames ? cpu_ms / frames : 0; }
};

using ProgressFn = std::function<void(int64_t done, int64_t total, double elapsed_ms)>;

// Where a job writes: a hidden temporary file beside the output (same
// extension, so the same container and codec), moved over the output only when
// the job finished it; removed otherwise. A job that fails or is killed leaves
// an existing output untouched. Special files (/dev/null) are written directly.
class OutputTarget {
 public:
  explicit OutputTarget(const std::string& output);
  ~OutputTarget();  // removes the temporary file unless committed
  OutputTarget(const OutputTarget&) = delete;
  OutputTarget& operator=(const OutputTarget&) = delete;
  const std::string& write_path() const { return write_; }
  Status Commit();  // the finished file takes the output's name

 private:
  std::string final_, write_;
  bool done_ = false;
};

// Runs the whole job. Refuses an output that is the input. The output file is
// finished and valid even when the input turns out to be damaged part-way
// (summary.input_status says so): it is written aside and moved into place
// when finished. Returns an error only when no output could be produced at all.
Result<JobSummary> RunOfflineJob(const JobConfig& cfg, Detector* detector, const ProgressFn& progress = {});

}  // namespace veil
