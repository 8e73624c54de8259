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
// A progress bar on stderr when it is a terminal; nothing otherwise.
ProgressFn TerminalProgress();
}  // namespace veil::cli
