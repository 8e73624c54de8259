// veil load's outputs: the field report's table (markdown), every figure as
// JSON and CSV, an SVG plot of FPS and p99 latency against sessions, compare
// mode's mean/range table, and --explain.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "load/load_runner.h"

namespace veil {

std::string MarkdownTable(const std::vector<LoadRun>& runs);
std::string Csv(const std::vector<LoadRun>& runs);
std::string Svg(const std::vector<LoadRun>& runs);
// Writes load.json (the previous one kept as load.prev.json), load.csv, load.md, load.svg.
Status WriteOutputs(const std::string& dir, const std::vector<LoadRun>& runs, const nlohmann::json& extra = {});

// Compare mode: figures of repeated runs per configuration.
struct CompareFigure {
  std::string name;  // e.g. "detect ms/frame @1"
  std::vector<double> a, b;
};
std::vector<CompareFigure> CompareFigures(const std::vector<LoadRun>& a, const std::vector<LoadRun>& b);
std::string CompareTable(const std::string& label_a, const std::string& label_b, const std::vector<CompareFigure>& f);
nlohmann::json CompareJson(const std::string& label_a, const std::string& label_b, const std::vector<CompareFigure>& f);

// --explain: the dominant stage of the last run, and what changed from the previous run.
std::string Explain(const nlohmann::json& last, const nlohmann::json* previous);

}  // namespace veil
