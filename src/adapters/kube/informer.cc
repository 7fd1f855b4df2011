#include "adapters/kube/informer.h"

#include <cmath>
#include <exception>
#include <iostream>
#include <utility>

#include "adapters/kube/url.h"
#include "core/common/strings.h"

namespace tessera::kube {
namespace {

constexpr int kMaxListRestarts = 3;
// A watch the server should have ended by its timeout is abandoned this much later, in case the
// connection silently died.
constexpr std::chrono::seconds kWatchGrace{30};

long long IntAt(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<long long>() : 0;
}

}  // namespace

Informer::Informer(Client& client, std::string collection_path, InformerHandlers handlers,
                   InformerOptions options)
    : client_(client),
      collection_path_(std::move(collection_path)),
      handlers_(std::move(handlers)),
      options_(std::move(options)),
      backoff_(options_.backoff_initial, options_.backoff_max),
      rng_(options_.jitter_seed != 0 ? options_.jitter_seed : std::random_device{}()) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
  std::lock_guard<std::mutex> lock(thread_mu_);
  if (thread_.joinable() || stop_.requested()) return;
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  stop_.Request();
  std::lock_guard<std::mutex> lock(thread_mu_);
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

std::string Informer::resource_version() const {
  std::lock_guard<std::mutex> lock(rv_mu_);
  return rv_;
}

std::chrono::system_clock::time_point Informer::last_fresh() const {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(fresh_ms_.load()));
}

void Informer::MarkFresh(std::chrono::system_clock::time_point as_of) {
  const int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(as_of.time_since_epoch()).count();
  int64_t before = fresh_ms_.load();
  while (before < ms && !fresh_ms_.compare_exchange_weak(before, ms)) {
  }
}

void Informer::SetResourceVersion(std::string rv) {
  if (rv.empty()) return;
  std::lock_guard<std::mutex> lock(rv_mu_);
  rv_ = std::move(rv);
}

void Informer::Log(const std::string& message) const {
  std::cerr << ("tessera: informer " + collection_path_ + ": " + message + "\n");
}

template <class Fn>
void Informer::CallHandler(const char* name, const Fn& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    Log(std::string(name) + " handler threw: " + e.what());
  } catch (...) {
    Log(std::string(name) + " handler threw a non-standard exception");
  }
}

std::string Informer::Query() const {
  std::string query;
  if (!options_.field_selector.empty()) {
    query += "&fieldSelector=" + EscapeUrlComponent(options_.field_selector);
  }
  if (!options_.label_selector.empty()) {
    query += "&labelSelector=" + EscapeUrlComponent(options_.label_selector);
  }
  return query;
}

std::chrono::seconds Informer::JitteredWatchTimeout() {
  std::uniform_real_distribution<double> factor(0.9, 1.1);
  const long long seconds =
      std::llround(static_cast<double>(options_.watch_timeout.count()) * factor(rng_));
  return std::chrono::seconds(std::max(1LL, seconds));
}

void Informer::Run() {
  bool need_list = true;
  while (!stop_.requested()) {
    if (need_list) {
      if (!List()) {
        if (!stop_.SleepFor(backoff_.Next())) return;
        continue;
      }
      need_list = false;
      backoff_.Reset();
    }
    const WatchEnd end = Watch();
    if (end == WatchEnd::kStopped) return;
    if (end == WatchEnd::kRewatchNow) continue;
    if (end == WatchEnd::kRelist) need_list = true;
    if (!stop_.SleepFor(backoff_.Next())) return;
  }
}

bool Informer::List() {
  const char* sep = collection_path_.find('?') == std::string::npos ? "?" : "&";
  const auto should_stop = [this] { return stop_.requested(); };
  std::vector<Json> objects;
  std::string continue_token, list_rv;
  int restarts = 0;
  // A list holds every change made before it was asked for (a restarted list, before the
  // restart): its freshness is the first page's request time, not its arrival.
  auto requested = std::chrono::system_clock::now();
  for (;;) {
    if (continue_token.empty()) requested = std::chrono::system_clock::now();
    std::string path = collection_path_ + sep + "limit=" + std::to_string(options_.page_size);
    if (!continue_token.empty()) path += "&continue=" + EscapeUrlComponent(continue_token);
    path += Query();
    Response response = client_.Send({"GET", path, "", ""}, should_stop);
    if (response.cancelled || stop_.requested()) return false;
    if (response.status == 410 && !continue_token.empty() && restarts < kMaxListRestarts) {
      // The continue token expired (the snapshot was compacted): start the list over.
      Log("list continue token expired; listing again from the start");
      ++restarts;
      objects.clear();
      continue_token.clear();
      continue;
    }
    if (!response.ok()) {
      Log("list failed: " + response.Describe());
      return false;
    }
    Json page = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
    if (!page.is_object()) {
      Log("list failed: the response is not a JSON object");
      return false;
    }
    if (auto items = page.find("items"); items != page.end() && items->is_array()) {
      for (Json& item : *items) objects.push_back(std::move(item));
    }
    list_rv = StringAt(page, {"metadata", "resourceVersion"});
    continue_token = StringAt(page, {"metadata", "continue"});
    if (continue_token.empty()) break;
  }
  SetResourceVersion(list_rv);
  if (handlers_.on_replace) {
    CallHandler("on_replace", [&] { handlers_.on_replace(std::move(objects)); });
  }
  ++relists_;
  synced_.store(true);
  MarkFresh(requested);
  return true;
}

Informer::WatchEnd Informer::Watch() {
  const std::chrono::seconds timeout = JitteredWatchTimeout();
  std::string path =
      collection_path_ + (collection_path_.find('?') == std::string::npos ? "?" : "&") + "watch=1";
  if (const std::string rv = resource_version(); !rv.empty()) {
    path += "&resourceVersion=" + EscapeUrlComponent(rv);
  }
  path += "&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(timeout.count()) + Query();

  const auto give_up = std::chrono::steady_clock::now() + timeout + kWatchGrace;
  auto last_heard = std::chrono::steady_clock::now();
  bool delivered = false;
  bool silent = false;
  WatchEnd end = WatchEnd::kRewatch;
  bool ended_by_event = false;
  Response response = client_.Stream(
      path,
      [&](std::string_view line) {
        last_heard = std::chrono::steady_clock::now();
        if (HandleEvent(line, &delivered, &end)) return true;
        ended_by_event = true;
        return false;
      },
      [&] {
        const auto now = std::chrono::steady_clock::now();
        silent = options_.watch_silence_limit.count() > 0 &&
                 now - last_heard > options_.watch_silence_limit;
        return stop_.requested() || now > give_up || silent;
      });
  if (delivered) backoff_.Reset();
  if (stop_.requested()) return WatchEnd::kStopped;
  if (ended_by_event) return end;
  if (silent) {
    Log("watch silent for longer than " + std::to_string(options_.watch_silence_limit.count()) +
        " ms; watching again from resourceVersion " + resource_version());
    return WatchEnd::kRewatchNow;
  }
  if (response.status == 410) {
    Log("watch: " + response.Describe() + "; relisting");
    return WatchEnd::kRelist;
  }
  if (response.status != 200 || !response.transport_error.empty() || response.cancelled) {
    Log("watch ended: " +
        (response.cancelled ? std::string("no end from the server") : response.Describe()));
    return WatchEnd::kRewatch;
  }
  // The server closed a watch: normal at its timeout. Without any event it may be a server that
  // closes at once, so that case waits before the next watch.
  return delivered ? WatchEnd::kRewatchNow : WatchEnd::kRewatch;
}

bool Informer::HandleEvent(std::string_view line, bool* delivered, WatchEnd* end) {
  if (Trim(line).empty()) return true;
  const Json event = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  auto object = event.is_object() ? event.find("object") : event.end();
  if (object == event.end() || !object->is_object()) {
    Log("malformed watch event; watching again from resourceVersion " + resource_version());
    *end = WatchEnd::kRewatch;
    return false;
  }
  const std::string type = StringAt(event, {"type"});
  if (type == "ERROR") {
    const long long code = IntAt(*object, "code");
    Log("watch error " + std::to_string(code) + ": " + StringAt(*object, {"message"}));
    *end = code == 410 ? WatchEnd::kRelist : WatchEnd::kRewatch;
    return false;
  }
  if (type != "ADDED" && type != "MODIFIED" && type != "DELETED" && type != "BOOKMARK") {
    Log("ignoring watch event of unknown type \"" + type + "\"");
    return true;
  }
  const auto received = std::chrono::system_clock::now();
  SetResourceVersion(StringAt(*object, {"metadata", "resourceVersion"}));
  *delivered = true;
  if (type == "DELETED") {
    if (handlers_.on_delete) CallHandler("on_delete", [&] { handlers_.on_delete(*object); });
  } else if (type != "BOOKMARK") {
    if (handlers_.on_upsert) CallHandler("on_upsert", [&] { handlers_.on_upsert(*object); });
  }
  // Events arrive in order: the handlers now hold every change up to this one (a bookmark:
  // up to its resource version), so the view is fresh as of its arrival.
  MarkFresh(received);
  return !stop_.requested();
}

}  // namespace tessera::kube
