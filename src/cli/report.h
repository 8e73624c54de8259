// Human and JSON renderings of a job summary.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "pipeline/offline_job.h"

namespace veil::cli {
std::string StageTable(const JobSummary& s);
nlohmann::json SummaryJson(const JobSummary& s);
// A progress bar on stderr when it is a terminal; nothing otherwise.
ProgressFn TerminalProgress();
}  // namespace veil::cli
