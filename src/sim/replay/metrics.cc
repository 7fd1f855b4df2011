#include "sim/replay/metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace tessera::sim::replay {
namespace {

// Category indices of frag.go's FragRatioDataMap; the cluster amount sums all but Q3 in this
// order (FragAmountSumExceptQ3), which we keep so that sums round as the simulator's do.
constexpr int kQ1 = 0, kQ2 = 1, kQ3 = 2, kQ4 = 3, kXl = 4, kXr = 5, kNa = 6;
constexpr int kCategories = 7;

int CategoryOf(FragCase c) {
  switch (c) {
    case FragCase::kQ1LackBoth:
      return kQ1;
    case FragCase::kQ2LackGpu:
      return kQ2;
    case FragCase::kQ3Satisfied:
      return kQ3;
    case FragCase::kQ4LackCpu:
      return kQ4;
    case FragCase::kXlSatisfied:
      return kXl;
    case FragCase::kXrLackCpu:
      return kXr;
    case FragCase::kNoAccess:
      return kNa;
  }
  return kNa;
}

double SumExceptQ3(const std::array<double, kCategories>& data) {
  double out = 0;
  for (int i = 0; i < kCategories; ++i) {
    if (i != kQ3) out += data[i];
  }
  return out;
}

std::string JoinModels(const std::vector<std::string>& models) {
  std::string joined;
  for (const auto& model : models) {
    if (!joined.empty()) joined += '|';
    joined += model;
  }
  return joined;
}

// GetNodePodFrag, given whether the node's model is accepted.
FragCase Classify(int64_t shape_cpu, int64_t shape_milli, int shape_gpus, bool accessible,
                  int64_t cpu_free, std::span<const int32_t> gpu_free) {
  if (shape_milli == 0) {
    return cpu_free >= shape_cpu ? FragCase::kXlSatisfied : FragCase::kXrLackCpu;
  }
  if (!accessible) return FragCase::kNoAccess;
  // CanNodeHostPodOnGpuMemory
  int needed = shape_gpus;
  bool gpus_fit = false;
  for (int32_t free : gpu_free) {
    if (free >= shape_milli && --needed <= 0) {
      gpus_fit = true;
      break;
    }
  }
  const bool cpu_fits = cpu_free >= shape_cpu;
  if (gpus_fit) return cpu_fits ? FragCase::kQ3Satisfied : FragCase::kQ4LackCpu;
  return cpu_fits ? FragCase::kQ2LackGpu : FragCase::kQ1LackBoth;
}

int64_t IdleMilli(std::span<const int32_t> gpu_free) {
  int64_t idle = 0;
  for (int32_t free : gpu_free) idle += free;
  return idle;
}

// GetGpuFragMilliByNodeResAndPodRes
int64_t FragMilliBelow(int64_t shape_milli, std::span<const int32_t> gpu_free) {
  int64_t frag = 0;
  for (int32_t free : gpu_free) {
    if (free < shape_milli) frag += free;
  }
  return frag;
}

bool ModelAccepted(const std::vector<std::string>& models, const std::string& node_model) {
  if (models.empty()) return true;
  if (node_model.empty()) return false;
  return std::find(models.begin(), models.end(), node_model) != models.end();
}

}  // namespace

PodShape ShapeOf(const TracePod& pod) {
  PodShape shape;
  shape.cpu_milli = pod.cpu_milli;
  if (pod.num_gpu > 0) {
    shape.gpu_milli = pod.gpu_milli;
    shape.num_gpu = pod.num_gpu;
    shape.models = pod.gpu_spec;
    shape.gpu_type = JoinModels(pod.gpu_spec);
  }
  return shape;
}

TargetWorkload BuildTargetWorkload(const std::vector<TracePod>& original_pods, int popularity_pct) {
  TargetWorkload target;
  // Shapes ordered as TargetPodList after sort.Sort(sort.Reverse(...)): count descending, then
  // PodResource.Less reversed (CPU, per-GPU milli, GPU count, type; all descending).
  using Key = std::tuple<int64_t, int64_t, int, std::string>;
  std::map<Key, std::pair<int64_t, PodShape>> counts;
  for (const TracePod& pod : original_pods) {
    PodShape shape = ShapeOf(pod);
    Key key{shape.cpu_milli, shape.gpu_milli, shape.num_gpu, shape.gpu_type};
    auto [it, inserted] = counts.try_emplace(key, 0, std::move(shape));
    ++it->second.first;
  }
  std::vector<std::pair<Key, std::pair<int64_t, PodShape>>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    if (a.second.first != b.second.first) return a.second.first > b.second.first;
    return a.first > b.first;
  });

  const double total = static_cast<double>(original_pods.size());
  target.pods = static_cast<int64_t>(original_pods.size());
  target.distinct_shapes = sorted.size();
  if (sorted.empty()) return target;
  target.distribution.reserve(sorted.size());
  for (const auto& [key, counted] : sorted) {
    target.distribution.push_back(
        TargetShape{counted.second, counted.first, static_cast<double>(counted.first) / total});
  }

  // GetTypicalPods with podIncreaseStep 1: take shapes until they cover the threshold.
  const double expected = static_cast<double>(popularity_pct) * total / 100.0;
  double covered = 0;
  size_t kept = 0;
  while (covered < expected && kept < sorted.size()) {
    covered += static_cast<double>(sorted[kept].second.first);
    ++kept;
  }
  for (size_t i = 0; i < kept; ++i) {
    TargetShape entry;
    entry.shape = std::move(sorted[i].second.second);
    entry.count = sorted[i].second.first;
    entry.probability = static_cast<double>(entry.count) / total;
    // Renormalised only when shapes were cut, as there.
    if (kept < sorted.size()) entry.probability /= covered / total;
    target.shapes.push_back(std::move(entry));
  }
  return target;
}

FragCase ClassifyFrag(const PodShape& shape, int64_t cpu_free, const std::string& node_model,
                      std::span<const int32_t> gpu_free) {
  return Classify(shape.cpu_milli, shape.gpu_milli, shape.num_gpu,
                  ModelAccepted(shape.models, node_model), cpu_free, gpu_free);
}

double ShapeFrag(const PodShape& shape, int64_t cpu_free, const std::string& node_model,
                 std::span<const int32_t> gpu_free) {
  FragCase c = ClassifyFrag(shape, cpu_free, node_model, gpu_free);
  if (c == FragCase::kQ3Satisfied) {
    return static_cast<double>(FragMilliBelow(shape.gpu_milli, gpu_free));
  }
  return static_cast<double>(IdleMilli(gpu_free));
}

FragCalculator::FragCalculator(const TargetWorkload& target,
                               const std::vector<std::string>& model_names) {
  for (const TargetShape& entry : target.shapes) {
    // NodeGpuShareFragAmount skips shapes with a frequency outside [0, 1].
    if (!(entry.probability >= 0 && entry.probability <= 1)) continue;
    Shape shape;
    shape.cpu_milli = entry.shape.cpu_milli;
    shape.gpu_milli = entry.shape.gpu_milli;
    shape.num_gpu = entry.shape.num_gpu;
    shape.probability = entry.probability;
    shape.any_model = entry.shape.models.empty();
    shape.accepts_model.resize(model_names.size());
    for (size_t m = 0; m < model_names.size(); ++m) {
      shape.accepts_model[m] = ModelAccepted(entry.shape.models, model_names[m]) ? 1 : 0;
    }
    probability_sum_ += shape.probability;
    shapes_.push_back(std::move(shape));
  }
}

double FragCalculator::NodeFrag(int64_t cpu_free, int model_id,
                                std::span<const int32_t> gpu_free) const {
  std::array<double, kCategories> data{};
  const double idle = static_cast<double>(IdleMilli(gpu_free));
  for (const Shape& shape : shapes_) {
    bool accessible = shape.any_model;
    if (!accessible && model_id >= 0 && model_id < static_cast<int>(shape.accepts_model.size())) {
      accessible = shape.accepts_model[model_id] != 0;
    }
    FragCase c =
        Classify(shape.cpu_milli, shape.gpu_milli, shape.num_gpu, accessible, cpu_free, gpu_free);
    if (c == FragCase::kQ3Satisfied) {
      // Part of the GPUs count as Lack-GPU fragment, the rest as satisfied.
      const double frag = static_cast<double>(FragMilliBelow(shape.gpu_milli, gpu_free));
      data[kQ2] += shape.probability * frag;
      data[kQ3] += shape.probability * (idle - frag);
    } else {
      data[CategoryOf(c)] += shape.probability * idle;
    }
  }
  return SumExceptQ3(data);
}

SeriesRecorder::SeriesRecorder(int total_gpus) : total_gpus_(total_gpus) {
  buckets_.resize(kMaxArrivedPct + 2);
}

void SeriesRecorder::Record(int64_t arrived_gpu_milli, int64_t allocated_gpu_milli,
                            double frag_gpu_milli, double idle_gpu_milli) {
  if (total_gpus_ <= 0) return;
  const double gpus = static_cast<double>(total_gpus_);
  // df.arrived_gpu_milli / total_gpu_num / 10, then round(x, 0): half to even.
  const double arrived_pct = static_cast<double>(arrived_gpu_milli) / gpus / 10;
  const long bucket = std::lrint(arrived_pct);
  if (bucket < 0 || bucket > 100000) return;
  if (static_cast<size_t>(bucket) + 2 > buckets_.size()) buckets_.resize(bucket + 2);
  Bucket& b = buckets_[bucket];
  ++b.samples;
  b.alloc_sum += std::nearbyint(static_cast<double>(allocated_gpu_milli) / gpus / 10 * 100) / 100;
  b.frag_sum += frag_gpu_milli;
  b.ratio_sum += idle_gpu_milli > 0 ? 100 * frag_gpu_milli / idle_gpu_milli : 0.0;
}

RunSeries SeriesRecorder::Finish() const {
  RunSeries series;
  const size_t points = std::max<size_t>(kMaxArrivedPct + 1, buckets_.size() - 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  series.gpu_alloc_pct.assign(points, nan);
  series.frag_amount_pct.assign(points, nan);
  series.frag_ratio_pct.assign(points, nan);
  auto round2 = [](double x) { return std::nearbyint(x * 100) / 100; };
  for (size_t x = 0; x < points; ++x) {
    Bucket sum = x < buckets_.size() ? buckets_[x] : Bucket{};
    if (sum.samples == 0) {
      // dfv = df[(arrive_ratio >= x-1) & (arrive_ratio <= x+1)]
      for (size_t y = x == 0 ? 0 : x - 1; y <= x + 1 && y < buckets_.size(); ++y) {
        sum.samples += buckets_[y].samples;
        sum.alloc_sum += buckets_[y].alloc_sum;
        sum.frag_sum += buckets_[y].frag_sum;
        sum.ratio_sum += buckets_[y].ratio_sum;
      }
    }
    if (sum.samples == 0) continue;
    const double n = sum.samples;
    series.gpu_alloc_pct[x] = round2(sum.alloc_sum / n);
    series.frag_amount_pct[x] = round2(100 * (sum.frag_sum / n) / 1000 / total_gpus_);
    series.frag_ratio_pct[x] = sum.ratio_sum / n;
  }
  return series;
}

}  // namespace tessera::sim::replay
