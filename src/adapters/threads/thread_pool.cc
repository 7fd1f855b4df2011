#include "adapters/threads/thread_pool.h"

namespace tessera::threads {

ThreadPool::ThreadPool(size_t concurrency) {
  const size_t workers = concurrency > 1 ? concurrency - 1 : 0;
  workers_.reserve(workers);
  for (size_t i = 0; i < workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Drain(std::unique_lock<std::mutex>& lock) {
  while (task_ != nullptr && next_ < count_) {
    const size_t index = next_++;
    const std::function<void(size_t)>& task = *task_;
    lock.unlock();
    task(index);
    lock.lock();
    if (++finished_ == count_) batch_done_.notify_all();
  }
}

void ThreadPool::WorkerLoop() {
  std::unique_lock lock(mu_);
  // Batches before this worker started count too: a Run right after construction may bump
  // batch_ before the thread first gets here.
  uint64_t seen = 0;
  while (true) {
    work_ready_.wait(lock, [&] { return stopping_ || batch_ != seen; });
    if (stopping_) return;
    seen = batch_;
    Drain(lock);
  }
}

void ThreadPool::Run(size_t count, const std::function<void(size_t)>& task) {
  if (count == 0) return;
  if (workers_.empty() || count == 1) {
    for (size_t i = 0; i < count; ++i) task(i);
    return;
  }
  std::unique_lock lock(mu_);
  task_ = &task;
  count_ = count;
  next_ = 0;
  finished_ = 0;
  ++batch_;
  work_ready_.notify_all();
  Drain(lock);
  batch_done_.wait(lock, [&] { return finished_ == count_; });
  task_ = nullptr;
}

}  // namespace tessera::threads
