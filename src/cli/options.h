// Command-line side of the one typed configuration (src/config): every config
// key with a flag becomes an option; --config FILE, --set KEY=VALUE and
// --print-config are shared by the subcommands.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/config.h"
#include "core/status.h"

namespace veil::cli {

struct ConfigOptions {
  std::string file;
  std::vector<std::string> sets;
  bool print = false;
  std::map<std::string, std::string> flag_text;            // key -> text given on the command line
  std::vector<std::pair<std::string, CLI::Option*>> flags;  // key -> option
  // Defaults < file < environment < flags/--set; every step validated.
  Result<Config> Build() const;
};

// Adds the config options. `renames` maps a key to a different flag name for
// this subcommand (e.g. eval's --live-detect-size).
// Flags of the [server], [inference] and [worker] sections are offered only
// to the commands they concern (veil serve: server + inference; veil worker:
// worker + inference); the keys themselves are valid everywhere, so one file
// can configure every subcommand.
enum class FlagSet { kJob, kServe, kWorker };
void AddConfigOptions(CLI::App& app, ConfigOptions& o, const std::map<std::string, std::string>& renames = {},
                      FlagSet set = FlagSet::kJob);

// The typed, validated structures every subcommand needs.
struct Resolved {
  Config config;
  PrivacyConfig privacy;
  DetectorConfig detector;
  EncoderOptions encoder;
  int decode_threads = 1;
};
Result<Resolved> Resolve(const ConfigOptions& o);

// Handles --print-config: prints the effective configuration and returns true.
bool PrintConfigIfAsked(const ConfigOptions& o, const Config& c);

// "WxH" within 32x32 .. 4096x4096.
Result<cv::Size> ParseBoundedSize(const std::string& s);
// Prints "veil: <message>" on stderr and sets the process exit code.
void Fail(int* rc, int code, const std::string& message);

}  // namespace veil::cli
