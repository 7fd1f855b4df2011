#include "adapters/kube/leader_election.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <optional>

#include "adapters/kube/time_format.h"
#include "fake_api_server.h"
#include "test_support.h"

namespace tessera::kube {
namespace {

using testing::ConfigFor;
using testing::FakeApiServer;
using testing::FastRetryOptions;
using testing::RecordedRequest;
using testing::ReplyJson;
using testing::StatusBody;
using testing::WaitUntil;

constexpr const char* kLeases = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
constexpr const char* kLease = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/tessera";

// The API server's side of one Lease: optimistic concurrency on metadata.resourceVersion.
class FakeLease {
 public:
  explicit FakeLease(FakeApiServer& server) {
    server.On("GET", kLease, [this](const RecordedRequest&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!lease_) {
        ReplyJson(res, 404, StatusBody(404, "NotFound", "leases \"tessera\" not found"));
      } else {
        ReplyJson(res, 200, *lease_);
      }
    });
    server.On("POST", kLeases, [this](const RecordedRequest& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if (lease_) {
        ReplyJson(res, 409, StatusBody(409, "AlreadyExists", "exists"));
        return;
      }
      StoreLocked(req.JsonBody());
      ReplyJson(res, 201, *lease_);
    });
    server.On("PUT", kLease, [this](const RecordedRequest& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      ++puts_;
      const Json body = req.JsonBody();
      if (fail_puts_) {
        ReplyJson(res, 500, StatusBody(500, "InternalError", "etcd timeout"));
      } else if (!lease_ || StringAt(body, {"metadata", "resourceVersion"}) != Rv()) {
        ReplyJson(res, 409, StatusBody(409, "Conflict", "the object has been modified"));
      } else if (conflicts_to_inject_ > 0) {
        --conflicts_to_inject_;
        ReplyJson(res, 409, StatusBody(409, "Conflict", "the object has been modified"));
      } else {
        StoreLocked(body);
        ReplyJson(res, 200, *lease_);
      }
    });
  }

  // Another process writes the lease (holds or renews it).
  void WriteAsOther(const std::string& holder, int transitions = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string now = FormatMicroTime(std::chrono::system_clock::now());
    StoreLocked({{"apiVersion", "coordination.k8s.io/v1"},
                 {"kind", "Lease"},
                 {"metadata", {{"name", "tessera"}, {"namespace", "kube-system"}}},
                 {"spec",
                  {{"holderIdentity", holder},
                   {"leaseDurationSeconds", 15},
                   {"acquireTime", now},
                   {"renewTime", now},
                   {"leaseTransitions", transitions}}}});
  }
  std::optional<Json> Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lease_;
  }
  std::string Holder() const {
    auto lease = Get();
    return lease ? StringAt(*lease, {"spec", "holderIdentity"}) : "";
  }
  int puts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return puts_;
  }
  void FailPuts(bool fail) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_puts_ = fail;
  }
  void InjectConflicts(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    conflicts_to_inject_ = n;
  }

 private:
  std::string Rv() const { return std::to_string(rv_); }
  void StoreLocked(Json lease) {
    ++rv_;
    lease["metadata"]["resourceVersion"] = Rv();
    lease_ = std::move(lease);
  }

  mutable std::mutex mu_;
  std::optional<Json> lease_;
  int rv_ = 100;
  int puts_ = 0;
  bool fail_puts_ = false;
  int conflicts_to_inject_ = 0;
};

class LeaderElectorTest : public ::testing::Test {
 protected:
  LeaderElectionOptions Options(const std::string& identity) const {
    LeaderElectionOptions options;
    options.lease_namespace = "kube-system";
    options.lease_name = "tessera";
    options.identity = identity;
    // Renewals every 20 ms; the deadline is generous so that a slow sanitizer build never
    // misses one by accident.
    options.lease_duration = std::chrono::milliseconds(1000);
    options.renew_deadline = std::chrono::milliseconds(800);
    options.retry_period = std::chrono::milliseconds(20);
    return options;
  }
  std::unique_ptr<LeaderElector> Elector(LeaderElectionOptions options) {
    return std::make_unique<LeaderElector>(
        client_, std::move(options), [this] { ++started_; }, [this] { ++stopped_; });
  }
  std::unique_ptr<LeaderElector> Elector(const std::string& identity) {
    return Elector(Options(identity));
  }

  FakeApiServer server_;
  FakeLease lease_{server_};
  Client client_{ConfigFor(server_), FastRetryOptions()};
  std::atomic<int> started_{0}, stopped_{0};
};

// "2026-11-30T06:01:02.123456Z": digits where the pattern has 'd', the rest literally.
// (Not std::regex: GCC 12 warns inside <regex> under ASan at -O2, and warnings are errors.)
bool IsMicroTime(const Json& value) {
  if (!value.is_string()) return false;
  const std::string text = value.get<std::string>();
  const std::string pattern = "dddd-dd-ddTdd:dd:dd.ddddddZ";
  if (text.size() != pattern.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (pattern[i] == 'd' ? !digit : text[i] != pattern[i]) return false;
  }
  return true;
}

TEST_F(LeaderElectorTest, CreatesAMissingLeaseAndRenewsIt) {
  LeaderElectionOptions options = Options("me");
  options.lease_duration = std::chrono::milliseconds(1500);
  auto elector = Elector(options);
  elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return elector->IsLeader(); }));
  EXPECT_EQ(started_.load(), 1);
  const Json lease = *lease_.Get();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "me");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 2);  // whole seconds, rounded up
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 0);
  EXPECT_TRUE(IsMicroTime(lease["spec"]["acquireTime"]));
  EXPECT_TRUE(IsMicroTime(lease["spec"]["renewTime"]));
  ASSERT_TRUE(WaitUntil([&] { return lease_.puts() >= 2; }));  // renewals
  EXPECT_EQ((*lease_.Get())["spec"]["acquireTime"], lease["spec"]["acquireTime"]);
  EXPECT_TRUE(elector->IsLeader());
  EXPECT_EQ(stopped_.load(), 0);
}

TEST_F(LeaderElectorTest, TakesAReleasedLeaseAndCountsTheTransition) {
  lease_.WriteAsOther("", /*transitions=*/3);
  auto elector = Elector("me");
  elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return elector->IsLeader(); }));
  EXPECT_EQ(lease_.Holder(), "me");
  EXPECT_EQ((*lease_.Get())["spec"]["leaseTransitions"], 4);
}

TEST_F(LeaderElectorTest, WaitsWhileAnotherHolderRenewsThenTakesOver) {
  lease_.WriteAsOther("other", /*transitions=*/1);
  std::atomic<bool> other_alive{true};
  std::thread other([&] {
    while (other_alive.load()) {
      lease_.WriteAsOther("other", 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  auto elector = Elector("me");  // lease_duration 1 s
  elector->Start();
  // Several lease durations of our clock: the record keeps changing, so we keep waiting.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);
  bool ever_leader = false;
  while (std::chrono::steady_clock::now() < until) {
    ever_leader = ever_leader || elector->IsLeader();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  other_alive = false;
  other.join();
  EXPECT_FALSE(ever_leader);
  EXPECT_EQ(lease_.puts(), 0);
  EXPECT_EQ(lease_.Holder(), "other");

  // The holder stopped renewing: after lease_duration without a change we take over.
  ASSERT_TRUE(WaitUntil([&] { return elector->IsLeader(); }));
  EXPECT_EQ(lease_.Holder(), "me");
  EXPECT_EQ((*lease_.Get())["spec"]["leaseTransitions"], 2);
  EXPECT_EQ(started_.load(), 1);
}

TEST_F(LeaderElectorTest, ConflictOnUpdateMeansTryAgainLater) {
  lease_.WriteAsOther("");
  lease_.InjectConflicts(1);
  auto elector = Elector("me");
  elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return elector->IsLeader(); }));
  EXPECT_GE(lease_.puts(), 2);  // the first update lost the race
  EXPECT_EQ(started_.load(), 1);
  EXPECT_EQ(lease_.Holder(), "me");
}

TEST_F(LeaderElectorTest, StepsDownWhenItCannotRenewWithinTheDeadline) {
  auto elector = Elector("me");
  elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return elector->IsLeader(); }));
  lease_.FailPuts(true);
  ASSERT_TRUE(WaitUntil([&] { return stopped_.load() == 1; }));
  EXPECT_FALSE(elector->IsLeader());
  lease_.FailPuts(false);  // the server recovers; the lease still names us, so we lead again
  ASSERT_TRUE(WaitUntil([&] { return elector->IsLeader(); }));
  EXPECT_EQ(started_.load(), 2);
}

TEST_F(LeaderElectorTest, StopReleasesTheLease) {
  auto elector = Elector("me");
  elector->Start();
  ASSERT_TRUE(WaitUntil([&] { return elector->IsLeader(); }));
  elector->Stop();
  EXPECT_FALSE(elector->IsLeader());
  EXPECT_EQ(stopped_.load(), 1);
  const Json lease = *lease_.Get();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 1);
}

TEST_F(LeaderElectorTest, OneLeaderAtATimeAndHandOverOnStop) {
  // A long lease, so that a slow test machine never lets it lapse between a's renewals.
  const auto slow = [this](const std::string& identity) {
    LeaderElectionOptions options = Options(identity);
    options.lease_duration = std::chrono::seconds(5);
    options.renew_deadline = std::chrono::seconds(4);
    return Elector(options);
  };
  auto a = slow("a");
  auto b = slow("b");
  a->Start();
  ASSERT_TRUE(WaitUntil([&] { return a->IsLeader(); }));
  b->Start();
  for (int i = 0; i < 30; ++i) {
    EXPECT_FALSE(b->IsLeader());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  a->Stop();  // releases: b need not wait for the lease to expire
  ASSERT_TRUE(WaitUntil([&] { return b->IsLeader(); }));
  EXPECT_EQ(lease_.Holder(), "b");
  b->Stop();
}

}  // namespace
}  // namespace tessera::kube
