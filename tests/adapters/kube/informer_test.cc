#include "adapters/kube/informer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "fake_api_server.h"
#include "test_support.h"

namespace tessera::kube {
namespace {

using testing::ConfigFor;
using ::testing::ElementsAre;
using testing::FakeApiServer;
using testing::FastRetryOptions;
using testing::ObjectNamed;
using testing::RecordedRequest;
using testing::ReplyJson;
using testing::StatusBody;
using testing::WaitUntil;
using testing::WatchLine;

constexpr const char* kPods = "/api/v1/pods";

// What the handlers saw, in order: "replace a,b", "upsert c", "delete a".
class HandlerLog {
 public:
  InformerHandlers Handlers() {
    InformerHandlers handlers;
    handlers.on_replace = [this](const std::vector<Json>& objects) {
      std::string names;
      for (const Json& o : objects) names += (names.empty() ? "" : ",") + Name(o);
      Add("replace " + names);
    };
    handlers.on_upsert = [this](const Json& o) { Add("upsert " + Name(o)); };
    handlers.on_delete = [this](const Json& o) { Add("delete " + Name(o)); };
    return handlers;
  }
  void Add(const std::string& entry) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.push_back(entry);
  }
  std::vector<std::string> Entries() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_;
  }
  size_t Size() const { return Entries().size(); }
  static std::string Name(const Json& o) { return StringAt(o, {"metadata", "name"}); }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> entries_;
};

// Successive watch requests get successive steps; once they run out, watches hang.
class WatchScript {
 public:
  struct Step {
    std::vector<std::string> chunks;
    int status = 200;  // otherwise a Status body with this code
  };
  void Add(Step step) {
    std::lock_guard<std::mutex> lock(mu_);
    steps_.push_back(std::move(step));
  }
  void Serve(FakeApiServer& server, httplib::Response& res) {
    std::optional<Step> step;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!steps_.empty()) {
        step = std::move(steps_.front());
        steps_.pop_front();
      }
    }
    if (!step) {
      server.Stream(res, {}, /*hang=*/true);
    } else if (step->status != 200) {
      ReplyJson(res, step->status, StatusBody(step->status, "Expired", "too old"));
    } else {
      server.Stream(res, step->chunks, /*hang=*/false);
    }
  }

 private:
  std::mutex mu_;
  std::deque<Step> steps_;
};

Json ListPage(const std::vector<std::string>& names, const std::string& rv,
              const std::string& continue_token = "") {
  Json list = {
      {"kind", "PodList"}, {"metadata", {{"resourceVersion", rv}}}, {"items", Json::array()}};
  if (!continue_token.empty()) list["metadata"]["continue"] = continue_token;
  for (const std::string& name : names) list["items"].push_back(ObjectNamed(name, "1"));
  return list;
}

class InformerTest : public ::testing::Test {
 protected:
  InformerTest() {
    options_.page_size = 2;
    options_.backoff_initial = std::chrono::milliseconds(5);
    options_.backoff_max = std::chrono::milliseconds(50);
    options_.jitter_seed = 1;
  }

  // Lists answer `lists` in turn (the last one repeats); watches follow `watches_`.
  void ServeLists(std::vector<Json> lists) {
    auto remaining = std::make_shared<std::deque<Json>>(lists.begin(), lists.end());
    auto mu = std::make_shared<std::mutex>();
    server_.On("GET", kPods,
               [this, remaining, mu](const RecordedRequest& req, httplib::Response& res) {
                 if (req.HasParam("watch")) {
                   watches_.Serve(server_, res);
                   return;
                 }
                 std::lock_guard<std::mutex> lock(*mu);
                 ReplyJson(res, 200, remaining->front());
                 if (remaining->size() > 1) remaining->pop_front();
               });
  }

  std::vector<RecordedRequest> Watches() const {
    std::vector<RecordedRequest> watches;
    for (auto& r : server_.Requests("GET", kPods)) {
      if (r.HasParam("watch")) watches.push_back(r);
    }
    return watches;
  }
  std::vector<RecordedRequest> Lists() const {
    std::vector<RecordedRequest> lists;
    for (auto& r : server_.Requests("GET", kPods)) {
      if (!r.HasParam("watch")) lists.push_back(r);
    }
    return lists;
  }

  FakeApiServer server_;
  Client client_{ConfigFor(server_), FastRetryOptions()};
  InformerOptions options_;
  HandlerLog log_;
  WatchScript watches_;
};

TEST_F(InformerTest, PaginatedListThenWatchEventsInOrder) {
  server_.On("GET", kPods, [this](const RecordedRequest& req, httplib::Response& res) {
    if (req.HasParam("watch")) {
      watches_.Serve(server_, res);
    } else if (req.Param("continue").empty()) {
      ReplyJson(res, 200, ListPage({"a", "b"}, "10", "c1"));
    } else {
      ReplyJson(res, 200, ListPage({"c"}, "10"));
    }
  });
  watches_.Add({{WatchLine("ADDED", ObjectNamed("d", "11")),
                 WatchLine("MODIFIED", ObjectNamed("a", "12")) +
                     WatchLine("DELETED", ObjectNamed("b", "13"))}});
  options_.field_selector = "spec.schedulerName=tessera";
  options_.label_selector = "app in (x)";
  Informer informer(client_, kPods, log_.Handlers(), options_);
  EXPECT_FALSE(informer.HasSynced());
  informer.Start();

  ASSERT_TRUE(WaitUntil([&] { return log_.Size() >= 4; }));
  EXPECT_THAT(log_.Entries(), ElementsAre("replace a,b,c", "upsert d", "upsert a", "delete b"));
  EXPECT_TRUE(informer.HasSynced());
  EXPECT_EQ(informer.resource_version(), "13");
  EXPECT_EQ(informer.relists(), 1U);

  const auto lists = Lists();
  ASSERT_EQ(lists.size(), 2U);
  EXPECT_EQ(lists[0].Param("limit"), "2");
  EXPECT_FALSE(lists[0].HasParam("continue"));
  EXPECT_EQ(lists[1].Param("continue"), "c1");
  EXPECT_EQ(lists[1].Param("fieldSelector"), "spec.schedulerName=tessera");
  EXPECT_EQ(lists[1].Param("labelSelector"), "app in (x)");

  ASSERT_TRUE(WaitUntil([&] { return Watches().size() >= 2; }));  // the first one ended
  const auto watches = Watches();
  EXPECT_EQ(watches[0].Param("resourceVersion"), "10");
  EXPECT_EQ(watches[0].Param("allowWatchBookmarks"), "true");
  EXPECT_EQ(watches[0].Param("fieldSelector"), "spec.schedulerName=tessera");
  const int timeout = std::stoi(watches[0].Param("timeoutSeconds"));
  EXPECT_GE(timeout, 270);
  EXPECT_LE(timeout, 330);
  EXPECT_EQ(watches[1].Param("resourceVersion"), "13");
}

TEST_F(InformerTest, BookmarkOnlyAdvancesTheResourceVersion) {
  ServeLists({ListPage({}, "10")});
  watches_.Add({{WatchLine("BOOKMARK", ObjectNamed("", "20"))}});
  Informer informer(client_, kPods, log_.Handlers(), options_);
  informer.Start();
  ASSERT_TRUE(WaitUntil([&] { return Watches().size() >= 2; }));
  EXPECT_EQ(Watches()[1].Param("resourceVersion"), "20");
  EXPECT_THAT(log_.Entries(), ElementsAre("replace "));
  EXPECT_EQ(informer.resource_version(), "20");
}

TEST_F(InformerTest, ExpiredErrorEventRelists) {
  ServeLists({ListPage({"a"}, "10"), ListPage({"b"}, "30")});
  watches_.Add({{WatchLine("ERROR", StatusBody(410, "Expired", "too old resource version"))}});
  Informer informer(client_, kPods, log_.Handlers(), options_);
  informer.Start();
  ASSERT_TRUE(WaitUntil([&] { return informer.relists() == 2 && Watches().size() >= 2; }));
  EXPECT_THAT(log_.Entries(), ElementsAre("replace a", "replace b"));
  EXPECT_EQ(Watches()[1].Param("resourceVersion"), "30");
}

TEST_F(InformerTest, GoneStatusOnWatchRelists) {
  ServeLists({ListPage({"a"}, "10"), ListPage({"b"}, "30")});
  watches_.Add({{}, 410});
  Informer informer(client_, kPods, log_.Handlers(), options_);
  informer.Start();
  ASSERT_TRUE(WaitUntil([&] { return informer.relists() == 2; }));
  EXPECT_THAT(log_.Entries(), ElementsAre("replace a", "replace b"));
}

TEST_F(InformerTest, OtherErrorEventRewatchesWithoutRelisting) {
  ServeLists({ListPage({"a"}, "10")});
  watches_.Add({{WatchLine("ADDED", ObjectNamed("x", "11")),
                 WatchLine("ERROR", StatusBody(500, "InternalError", "etcd hiccup"))}});
  Informer informer(client_, kPods, log_.Handlers(), options_);
  informer.Start();
  ASSERT_TRUE(WaitUntil([&] { return Watches().size() >= 2; }));
  EXPECT_EQ(Watches()[1].Param("resourceVersion"), "11");
  EXPECT_EQ(informer.relists(), 1U);
}

TEST_F(InformerTest, TruncatedStreamRewatchesFromTheLastVersion) {
  ServeLists({ListPage({}, "10")});
  const std::string y = WatchLine("ADDED", ObjectNamed("y", "12"));
  watches_.Add({{WatchLine("ADDED", ObjectNamed("x", "11")), y.substr(0, y.size() / 2)}});
  watches_.Add({{y}});
  Informer informer(client_, kPods, log_.Handlers(), options_);
  informer.Start();
  ASSERT_TRUE(WaitUntil([&] { return log_.Size() >= 3 && Watches().size() >= 3; }));
  EXPECT_THAT(log_.Entries(), ElementsAre("replace ", "upsert x", "upsert y"));
  EXPECT_EQ(Watches()[1].Param("resourceVersion"), "11");
  EXPECT_EQ(Watches()[2].Param("resourceVersion"), "12");
  EXPECT_EQ(informer.relists(), 1U);
}

TEST_F(InformerTest, MalformedLineEndsTheWatchAndRewatches) {
  ServeLists({ListPage({}, "10")});
  watches_.Add({{"this is not json\n", WatchLine("ADDED", ObjectNamed("z", "11"))}});
  Informer informer(client_, kPods, log_.Handlers(), options_);
  informer.Start();
  ASSERT_TRUE(WaitUntil([&] { return Watches().size() >= 2; }));
  EXPECT_EQ(Watches()[1].Param("resourceVersion"), "10");  // z was never taken
  EXPECT_THAT(log_.Entries(), ElementsAre("replace "));
  EXPECT_EQ(informer.relists(), 1U);
}

TEST_F(InformerTest, ExpiredContinueTokenRestartsTheList) {
  auto expired_once = std::make_shared<std::atomic<bool>>(false);
  server_.On("GET", kPods,
             [this, expired_once](const RecordedRequest& req, httplib::Response& res) {
               if (req.HasParam("watch")) {
                 watches_.Serve(server_, res);
               } else if (req.Param("continue").empty()) {
                 ReplyJson(res, 200, ListPage({"a", "b"}, "10", "c1"));
               } else if (!expired_once->exchange(true)) {
                 ReplyJson(res, 410, StatusBody(410, "Expired", "continue token too old"));
               } else {
                 ReplyJson(res, 200, ListPage({"c"}, "10"));
               }
             });
  Informer informer(client_, kPods, log_.Handlers(), options_);
  informer.Start();
  ASSERT_TRUE(WaitUntil([&] { return informer.HasSynced(); }));
  std::vector<std::string> continues;
  for (const auto& r : Lists()) continues.push_back(r.Param("continue"));
  EXPECT_THAT(continues, ElementsAre("", "c1", "", "c1"));
  EXPECT_THAT(log_.Entries(), ElementsAre("replace a,b,c"));
  EXPECT_EQ(informer.relists(), 1U);
}

TEST_F(InformerTest, FailedListIsRetriedAndNotSyncedUntilItWorks) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  server_.On("GET", kPods, [this, calls](const RecordedRequest& req, httplib::Response& res) {
    if (req.HasParam("watch")) {
      watches_.Serve(server_, res);
    } else if ((*calls)++ == 0) {
      ReplyJson(res, 403, StatusBody(403, "Forbidden", "pods is forbidden"));
    } else {
      ReplyJson(res, 200, ListPage({"a"}, "10"));
    }
  });
  Informer informer(client_, kPods, log_.Handlers(), options_);
  informer.Start();
  ASSERT_TRUE(WaitUntil([&] { return informer.HasSynced(); }));
  EXPECT_EQ(calls->load(), 2);
  EXPECT_THAT(log_.Entries(), ElementsAre("replace a"));
}

TEST_F(InformerTest, HandlerExceptionsDoNotStopTheInformer) {
  ServeLists({ListPage({}, "10")});
  watches_.Add(
      {{WatchLine("ADDED", ObjectNamed("p", "11")), WatchLine("ADDED", ObjectNamed("q", "12"))}});
  InformerHandlers handlers = log_.Handlers();
  handlers.on_upsert = [this](const Json& o) {
    log_.Add("upsert " + HandlerLog::Name(o));
    if (HandlerLog::Name(o) == "p") throw std::runtime_error("handler bug");
  };
  Informer informer(client_, kPods, handlers, options_);
  informer.Start();
  ASSERT_TRUE(WaitUntil([&] { return log_.Size() >= 3; }));
  EXPECT_THAT(log_.Entries(), ElementsAre("replace ", "upsert p", "upsert q"));
  EXPECT_EQ(informer.resource_version(), "12");
}

// Issue 38 C: HasSynced stays true forever after the first list, so freshness is what a
// destroying caller reads: it advances with lists, events and bookmarks, stands still while a
// watch is silent, and a watch silent past the limit is started again.
TEST_F(InformerTest, ASilentWatchIsRestartedAndFreshnessFollowsWhatWasDelivered) {
  using std::chrono::floor;
  using std::chrono::milliseconds;
  using std::chrono::system_clock;
  ServeLists({ListPage({"a"}, "10")});
  options_.watch_silence_limit = milliseconds(300);
  Informer informer(client_, kPods, log_.Handlers(), options_);
  EXPECT_EQ(informer.last_fresh(), system_clock::time_point{});
  const auto before_list = floor<milliseconds>(system_clock::now());
  informer.Start();
  ASSERT_TRUE(WaitUntil([&] { return informer.HasSynced() && Watches().size() == 1; }));
  const auto listed = informer.last_fresh();
  EXPECT_GE(listed, before_list);
  // The first watch hangs without a word: the view gets no fresher, though it stays synced.
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_EQ(informer.last_fresh(), listed);
  EXPECT_TRUE(informer.HasSynced());
  // Past the limit it is watched again from the list's version; a bookmark there makes the
  // view fresh again, without a relist.
  watches_.Add({{WatchLine("BOOKMARK", ObjectNamed("", "20"))}});
  const auto before_bookmark = floor<milliseconds>(system_clock::now());
  ASSERT_TRUE(WaitUntil([&] { return informer.last_fresh() >= before_bookmark; }));
  EXPECT_EQ(informer.resource_version(), "20");
  const auto watches = Watches();
  ASSERT_GE(watches.size(), 2U);
  EXPECT_EQ(watches[1].Param("resourceVersion"), "10");
  EXPECT_EQ(informer.relists(), 1U);
  EXPECT_THAT(log_.Entries(), ElementsAre("replace a"));
}

TEST_F(InformerTest, StopReturnsPromptlyWhileAWatchHangs) {
  ServeLists({ListPage({"a"}, "10")});
  Informer informer(client_, kPods, log_.Handlers(), options_);
  informer.Start();
  ASSERT_TRUE(WaitUntil([&] { return Watches().size() == 1; }));
  const auto start = std::chrono::steady_clock::now();
  informer.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(Watches().size(), 1U);
}

}  // namespace
}  // namespace tessera::kube
