#include "config/config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <toml.hpp>

namespace veil {
namespace {

// Converts text (env, flags) to the key's type.
Result<Value> ParseText(const KeySpec& k, const std::string& t) {
  auto bad = [&](const char* what) {
    return Status::Error("config key " + k.key + " needs " + what + ", got '" + t + "'");
  };
  switch (k.def.index()) {
    case 0: {
      int64_t v = 0;
      auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size()) return bad("an integer");
      return Value(v);
    }
    case 1: {
      char* end = nullptr;
      const double v = std::strtod(t.c_str(), &end);
      if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v)) return bad("a number");
      return Value(v);
    }
    case 2:
      if (t == "true" || t == "1") return Value(true);
      if (t == "false" || t == "0") return Value(false);
      return bad("true or false");
    default:
      return Value(t);
  }
}

Result<Value> FromToml(const KeySpec& k, const toml::value& v) {
  const auto wrong = [&](const char* what) {
    return Status::Error("config key " + k.key + " needs " + what);
  };
  switch (k.def.index()) {
    case 0:
      if (!v.is_integer()) return wrong("an integer");
      return Value(int64_t(v.as_integer()));
    case 1:
      if (v.is_integer()) return Value(double(v.as_integer()));
      if (!v.is_floating()) return wrong("a number");
      return Value(double(v.as_floating()));
    case 2:
      if (!v.is_boolean()) return wrong("true or false");
      return Value(bool(v.as_boolean()));
    default:
      if (v.is_integer()) return Value(std::to_string(v.as_integer()));  // e.g. detect_every = 3
      if (!v.is_string()) return wrong("a string");
      return Value(std::string(v.as_string().str));
  }
}

}  // namespace

const char* SourceName(Source s) {
  switch (s) {
    case Source::kDefault: return "default";
    case Source::kFile: return "file";
    case Source::kEnv: return "env";
    case Source::kFlag: return "flag";
  }
  return "?";
}

Source Config::source(const std::string& key) const {
  auto it = sources_.find(key);
  return it == sources_.end() ? Source::kDefault : it->second;
}

Status Config::Set(const KeySpec& k, const Value& v, Source src) {
  if (Status st = k.set(s_, v); !st) {
    const std::string& m = st.message();  // named by the key already, or not
    return m.rfind(k.key, 0) == 0 ? st
                                   : Status::Error("config key " + k.key + (k.flag.empty() ? "" : " (--" + k.flag + ")") + ": " + m);
  }
  sources_[k.key] = src;
  return Status::Ok();
}

Status Config::SetText(const std::string& key, const std::string& text, Source src) {
  const KeySpec* k = FindKey(key);
  if (!k) return Status::Error("unknown config key '" + key + "'");
  auto v = ParseText(*k, text);
  if (!v) return v.status();
  return Set(*k, *v, src);
}

namespace {
// TOML files are UTF-8 text (TOML 1.0). Checked before the parser sees them: Debian's toml11
// reads past its buffer on invalid UTF-8 inside an unterminated literal string (found by
// fuzz_config). Also bounds the size: a configuration is a few kilobytes.
Status CheckTomlText(const std::string& t, const std::string& path) {
  if (t.size() > (1 << 20)) return Status::Error("config " + path + " is larger than 1 MiB");
  for (size_t i = 0; i < t.size();) {
    const auto c = static_cast<unsigned char>(t[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = n > 0 && i + n <= t.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(t[i + k]) & 0xc0) == 0x80;
    if (ok && n == 1) ok = c >= 0x20 || c == '\t' || c == '\n' || c == '\r';
    if (!ok || c == 0x7f)
      return Status::Error("config " + path + ": not TOML text (invalid UTF-8 or a control character at byte " +
                           std::to_string(i) + ")");
    i += n;
  }
  return Status::Ok();
}
}  // namespace

Status Config::LoadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot read config " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (Status s = CheckTomlText(text, path); !s) return s;
  toml::value root;
  try {
    std::istringstream ss(text);
    root = toml::parse(ss, path);
  } catch (const std::exception& e) {
    return Status::Error("cannot read config " + path + ": " + e.what());
  }
  if (!root.is_table()) return Status::Error("config " + path + ": not a TOML table");
  for (const auto& [section, table] : root.as_table()) {
    if (!table.is_table()) return Status::Error("config " + path + ": unknown key '" + section + "' (keys live in sections)");
    for (const auto& [name, value] : table.as_table()) {
      const std::string key = section + "." + name;
      const KeySpec* k = FindKey(key);
      if (!k) return Status::Error("config " + path + ": unknown key '" + key + "'");
      auto v = FromToml(*k, value);
      if (!v) return Status::Error("config " + path + ": " + v.error());
      if (Status st = Set(*k, *v, Source::kFile); !st) return Status::Error("config " + path + ": " + st.message());
    }
  }
  return Status::Ok();
}

Status Config::LoadEnv(char** envp) {
  for (char** e = envp; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    const std::string name(*e, eq - *e);
    // Only VEIL_<SECTION>__<KEY> names are config; VEIL_ASSETS, VEIL_MODEL_DIR are paths.
    if (name.rfind("VEIL_", 0) != 0 || name.find("__") == std::string::npos) continue;
    const KeySpec* match = nullptr;
    for (const auto& k : ConfigKeys())
      if (EnvName(k.key) == name) match = &k;
    if (!match) return Status::Error("unknown config variable " + name + " in the environment");
    if (Status s = SetText(match->key, eq + 1, Source::kEnv); !s)
      return Status::Error(name + ": " + s.message());
  }
  return Status::Ok();
}

std::string Config::Dump() const {
  std::string out, section;
  for (const auto& k : ConfigKeys()) {
    const std::string sec = k.key.substr(0, k.key.find('.'));
    if (sec != section) {
      out += (out.empty() ? "[" : "\n[") + sec + "]\n";
      section = sec;
    }
    out += k.key.substr(sec.size() + 1) + " = " + FormatValue(k.get(s_)) + "  # " + SourceName(source(k.key)) +
           ": " + k.doc + "\n";
  }
  return out;
}

std::string Config::Values(const std::function<bool(const std::string& key)>& keep) const {
  std::string out;
  for (const auto& k : ConfigKeys())
    if (keep(k.key)) out += k.key + " = " + FormatValue(k.get(s_)) + "\n";
  return out;
}

Result<PrivacyConfig> Config::BuildPrivacy() const {
  PrivacyConfig c = s_.privacy;
  c.tracker.tentative_frames = std::min(c.tracker.tentative_frames, c.tracker.max_coast_frames);
  if (Status st = Validate(c); !st) return st;
  return c;
}

Result<DetectorConfig> Config::BuildDetector() const {
  if (Status st = Validate(s_.detector); !st) return st;
  return s_.detector;
}

Result<EncoderOptions> Config::BuildEncoder() const {
  for (Status st : {Validate(s_.encoder), ValidateDecoderThreads(s_.decode_threads)})
    if (!st) return st;
  return s_.encoder;
}

Result<ServerSettings> Config::BuildServer() const {
  ServerSettings v = s_.server;
  v.scheduler = s_.inference;
  v.fault_injection = s_.fault_injection;
  if (Status st = Validate(v); !st) return st;
  // Derived values, after validation.
  if (v.webrtc.publish_token.empty()) v.webrtc.publish_token = v.token;
  while (!v.cluster_public_url.empty() && v.cluster_public_url.back() == '/') v.cluster_public_url.pop_back();
  return v;
}

Result<WorkerSettings> Config::BuildWorker() const {
  WorkerSettings w = s_.worker;
  w.scheduler = s_.inference;
  w.fault_injection = s_.fault_injection;
  if (Status st = Validate(w); !st) return st;
  return w;
}

}  // namespace veil
