#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace tessera::sim::replay {

// Runs task(i) for every i in [0, count) on up to `jobs` threads (<= 0: one per hardware
// thread). Tasks are taken in index order; each writes only its own result slot, so results do
// not depend on the number of threads.
template <class Task>
void ForEachInParallel(size_t count, int jobs, const Task& task) {
  if (jobs <= 0) jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) task(i);
  };
  const size_t threads = std::min(static_cast<size_t>(jobs), count);
  if (threads <= 1) {
    worker();
    return;
  }
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& thread : pool) thread.join();
}

}  // namespace tessera::sim::replay
