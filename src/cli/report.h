// Human and JSON renderings of a job summary.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "pipeline/offline_job.h"

namespace veil::cli {
std::string StageTable(const JobSummary& s);
nlohmann::json SummaryJson(const JobSummary& s);
// The job's figures in the Prometheus text format (for a textfile collector):
// per-stage latency histograms and the frame, detection and fail-closed counters.
std::string SummaryPrometheus(const JobSummary& s, const std::string& input);
// `veil anonymize --masks-csv`: what was pixelated, one row per rectangle. kMasksCsvHeader is the
// first line; MasksCsvRows gives one frame's rows (none when nothing was pixelated). `kind` is
// whole_frame (fail-closed or full_blur; the core and grown columns are empty), matched (the
// newest detection found this face) or coasting (the tracker carries it without a match);
// `confirmed` is 0 for a lone low-score box not seen again yet. core is the track's box,
// grown that box grown for motion, x..h the pixelated rectangle (grown plus the margin, snapped
// to mosaic cells). round_* give the rounded shape inside it (vision/mosaic.h, RoundRect: a pixel
// whose centre (x + 0.5, y + 0.5) has dx = max(0, |x + 0.5 - cx| - ix), dy likewise, and
// (dx/rx)^2 + (dy/ry)^2 <= 1 is pixelated); empty with mosaic.round off. Pixels of the output frame.
extern const char kMasksCsvHeader[];
std::string MasksCsvRows(int64_t frame, const FrameReport& r);
// A progress bar on stderr when it is a terminal; nothing otherwise.
ProgressFn TerminalProgress();
}  // namespace veil::cli
