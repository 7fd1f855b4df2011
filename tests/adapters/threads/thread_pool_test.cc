#include "adapters/threads/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace tessera::threads {
namespace {

TEST(ThreadPoolTest, RunsEveryTaskOnceAndReturnsWhenAllAreDone) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.concurrency(), 3U);
  for (size_t count : {0U, 1U, 2U, 3U, 7U, 100U}) {
    std::vector<std::atomic<int>> runs(count);
    pool.Run(count, [&](size_t i) { runs[i].fetch_add(1); });
    for (size_t i = 0; i < count; ++i) EXPECT_EQ(runs[i].load(), 1) << "task " << i << "/" << count;
  }
}

TEST(ThreadPoolTest, TasksRunOnSeveralThreads) {
  ThreadPool pool(2);
  std::mutex mu;
  std::set<std::thread::id> ids;
  // Each task waits until two tasks have started, so one thread alone could not finish them.
  std::atomic<int> started{0};
  pool.Run(2, [&](size_t) {
    started.fetch_add(1);
    while (started.load() < 2) std::this_thread::yield();
    std::lock_guard lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ids.size(), 2U);
}

TEST(ThreadPoolTest, OneThreadRunsTasksInOrderOnTheCaller) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.concurrency(), 1U);
  std::vector<size_t> order;
  const auto caller = std::this_thread::get_id();
  pool.Run(4, [&](size_t i) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(i);
  });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3}));
}

TEST(ThreadPoolTest, ManyBatchesInARowLoseNoTask) {
  ThreadPool pool(4);
  std::atomic<long> sum{0};
  for (int batch = 0; batch < 2000; ++batch) {
    pool.Run(5, [&](size_t i) { sum.fetch_add(static_cast<long>(i) + 1); });
  }
  EXPECT_EQ(sum.load(), 2000L * 15);
}

}  // namespace
}  // namespace tessera::threads
