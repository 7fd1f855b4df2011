#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/common/task_runner.h"

namespace tessera::threads {

// A fixed set of worker threads that wait between calls, so that handing out one decision's
// work costs microseconds, not a thread start per call. Run() is for one caller at a time (the
// scheduler holds its lock around a decision); the caller works on tasks too.
class ThreadPool final : public TaskRunner {
 public:
  // `concurrency` counts the calling thread: 1 starts no worker.
  explicit ThreadPool(size_t concurrency);
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t concurrency() const override { return workers_.size() + 1; }
  void Run(size_t count, const std::function<void(size_t)>& task) override;

 private:
  void WorkerLoop();
  // Takes and runs tasks of the current batch until none is left (mu_ held on entry and exit).
  void Drain(std::unique_lock<std::mutex>& lock);

  std::mutex mu_;
  std::condition_variable work_ready_;
  std::condition_variable batch_done_;
  const std::function<void(size_t)>* task_ = nullptr;  // the current batch
  size_t count_ = 0;
  size_t next_ = 0;      // next task to hand out
  size_t finished_ = 0;  // tasks that returned
  uint64_t batch_ = 0;   // bumped per Run, so a worker wakes once per batch
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tessera::threads
