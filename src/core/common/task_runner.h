#pragma once

#include <cstddef>
#include <functional>

namespace tessera {

// Runs independent tasks, possibly at once. The core starts no thread itself: whoever runs it
// (`tessera serve --filter-threads`, the benchmarks) passes one in; without one, work runs on the
// calling thread.
class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // How many tasks may run at once (the calling thread included).
  virtual size_t concurrency() const = 0;
  // Runs task(0) .. task(count - 1) and returns when every one has returned. Tasks must not
  // throw, and must not call Run on the same runner.
  virtual void Run(size_t count, const std::function<void(size_t)>& task) = 0;
};

}  // namespace tessera
