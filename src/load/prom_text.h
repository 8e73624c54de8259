// Reads the Prometheus text format veil serves on /metrics, enough to take
// two snapshots of a histogram and summarize what happened between them.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace veil {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
std::vector<PromSample> ParsePromText(const std::string& text);

// A histogram's cumulative buckets (upper bound -> count), sum and count.
struct HistSnapshot {
  std::map<double, double> buckets;
  double sum = 0, count = 0;
  double mean() const { return count > 0 ? sum / count : 0; }
  double Quantile(double q) const;  // linear within the bucket, like histogram_quantile()
};

// The histogram `name` summed over every series whose labels contain `match`; bounds and sum
// multiplied by `scale` (1000: a *_seconds histogram read in ms).
HistSnapshot SumHistogram(const std::vector<PromSample>& s, const std::string& name,
                          const std::map<std::string, std::string>& match, double scale = 1);
// later - earlier, bucket by bucket (what was observed in between).
HistSnapshot Delta(const HistSnapshot& later, const HistSnapshot& earlier);
HistSnapshot Merge(const HistSnapshot& a, const HistSnapshot& b);
// Sum of the plain series `name` whose labels contain `match`.
double SumValue(const std::vector<PromSample>& s, const std::string& name,
                const std::map<std::string, std::string>& match = {});

}  // namespace veil
