#include "load/prom_text.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace veil {
namespace {

bool Contains(const std::map<std::string, std::string>& labels, const std::map<std::string, std::string>& match) {
  for (const auto& [k, v] : match) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

double ParseNumber(const std::string& t) {
  if (t == "+Inf" || t == "Inf") return std::numeric_limits<double>::infinity();
  if (t == "-Inf") return -std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  return end == t.c_str() ? std::nan("") : v;
}

}  // namespace

std::vector<PromSample> ParsePromText(const std::string& text) {
  std::vector<PromSample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    PromSample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') break;
        const std::string key = line.substr(i, eq - i);
        std::string val;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) ++j;
          val += line[j];
        }
        s.labels[key] = val;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t end = line.find(' ', i);
    s.value = ParseNumber(line.substr(i, end == std::string::npos ? std::string::npos : end - i));
    if (!s.name.empty() && !std::isnan(s.value)) out.push_back(std::move(s));
  }
  return out;
}

double HistSnapshot::Quantile(double q) const {
  if (count <= 0 || buckets.empty()) return 0;
  const double rank = q * count;
  double prev_bound = 0, prev_count = 0;
  for (const auto& [bound, c] : buckets) {
    if (c >= rank) {
      if (std::isinf(bound)) return prev_bound;  // beyond the last finite bucket: its bound (a floor)
      const double in_bucket = c - prev_count;
      const double frac = in_bucket > 0 ? (rank - prev_count) / in_bucket : 0;
      return prev_bound + (bound - prev_bound) * frac;
    }
    prev_bound = bound;
    prev_count = c;
  }
  return prev_bound;
}

HistSnapshot SumHistogram(const std::vector<PromSample>& s, const std::string& name,
                          const std::map<std::string, std::string>& match, double scale) {
  HistSnapshot h;
  for (const PromSample& p : s) {
    if (!Contains(p.labels, match)) continue;
    if (p.name == name + "_bucket") {
      auto it = p.labels.find("le");
      if (it != p.labels.end()) h.buckets[ParseNumber(it->second) * scale] += p.value;
    } else if (p.name == name + "_sum") {
      h.sum += p.value * scale;
    } else if (p.name == name + "_count") {
      h.count += p.value;
    }
  }
  return h;
}

HistSnapshot Delta(const HistSnapshot& later, const HistSnapshot& earlier) {
  HistSnapshot d;
  for (const auto& [b, c] : later.buckets) {
    auto it = earlier.buckets.find(b);
    d.buckets[b] = std::max(0.0, c - (it == earlier.buckets.end() ? 0 : it->second));
  }
  d.sum = std::max(0.0, later.sum - earlier.sum);
  d.count = std::max(0.0, later.count - earlier.count);
  return d;
}

HistSnapshot Merge(const HistSnapshot& a, const HistSnapshot& b) {
  HistSnapshot m = a;
  for (const auto& [k, c] : b.buckets) m.buckets[k] += c;
  m.sum += b.sum;
  m.count += b.count;
  return m;
}

double SumValue(const std::vector<PromSample>& s, const std::string& name,
                const std::map<std::string, std::string>& match) {
  double v = 0;
  for (const PromSample& p : s)
    if (p.name == name && Contains(p.labels, match)) v += p.value;
  return v;
}

}  // namespace veil
