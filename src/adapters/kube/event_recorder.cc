#include "adapters/kube/event_recorder.h"

#include <iostream>
#include <utility>

#include "adapters/kube/token_bucket.h"

namespace tessera::kube {

EventRecorder::EventRecorder(Client& client, std::string reporting_component,
                             EventRecorderOptions options)
    : client_(client), reporting_component_(std::move(reporting_component)), options_(options) {}

EventRecorder::~EventRecorder() { Stop(); }

void EventRecorder::Start() {
  std::lock_guard<std::mutex> lock(thread_mu_);
  if (thread_.joinable() || stop_.requested()) return;
  thread_ = std::thread([this] { Run(); });
}

bool EventRecorder::Record(EventSpec event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_ && queue_.size() < options_.queue_capacity) {
      if (event.reporting_component.empty()) event.reporting_component = reporting_component_;
      queue_.push_back(std::move(event));
      queued_.notify_one();
      return true;
    }
  }
  ++dropped_;
  return false;
}

void EventRecorder::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped_ += queue_.size();
    queue_.clear();
  }
  queued_.notify_all();
  stop_.Request();
  std::lock_guard<std::mutex> lock(thread_mu_);
  if (thread_.joinable()) thread_.join();
}

void EventRecorder::Run() {
  TokenBucket bucket(options_.events_per_second, options_.burst, TokenBucket::Clock::now());
  for (;;) {
    EventSpec event;
    {
      std::unique_lock<std::mutex> lock(mu_);
      queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      event = std::move(queue_.front());
      queue_.pop_front();
    }
    for (auto wait = bucket.TryTake(TokenBucket::Clock::now());
         wait != TokenBucket::Clock::duration::zero();
         wait = bucket.TryTake(TokenBucket::Clock::now())) {
      if (!stop_.SleepFor(wait)) {
        ++dropped_;
        return;
      }
    }
    if (Status s = CreateEvent(client_, event, [this] { return stop_.requested(); }); !s) {
      if (stop_.requested()) {
        ++dropped_;
        return;
      }
      ++failed_;
      std::cerr << "tessera: " << s.message() << "\n";
    } else {
      ++sent_;
    }
  }
}

}  // namespace tessera::kube
