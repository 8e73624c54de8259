#pragma once
#include <CLI/CLI.hpp>
namespace veil::cli {
// Registers `veil anonymize`; the callback stores the exit code in *rc.
void RegisterAnonymize(CLI::App& app, int* rc);
void RegisterBench(CLI::App& app, int* rc);
void RegisterEval(CLI::App& app, int* rc);
void RegisterServe(CLI::App& app, int* rc);
void RegisterPublish(CLI::App& app, int* rc);
void RegisterView(CLI::App& app, int* rc);
void RegisterLoad(CLI::App& app, int* rc);
void RegisterWorker(CLI::App& app, int* rc);
void RegisterBenchAi(CLI::App& app, int* rc);
void RegisterDetect(CLI::App& app, int* rc);
}  // namespace veil::cli
