#include "adapters/kube/delegated_auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "fake_api_server.h"

namespace tessera::kube {
namespace {

using testing::ConfigFor;
using testing::FakeApiServer;
using testing::FastRetryOptions;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RecordedRequest;
using testing::ReplyJson;
using testing::StatusBody;

constexpr const char* kTokenReviews = "/apis/authentication.k8s.io/v1/tokenreviews";
constexpr const char* kAccessReviews = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
constexpr const char* kToken = "s3cr3t-token-value";
constexpr const char* kBearer = "Bearer s3cr3t-token-value";

Json AuthenticatedReview(const std::string& user) {
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "TokenReview"},
          {"status",
           {{"authenticated", true},
            {"user",
             {{"username", user},
              {"uid", "uid-7"},
              {"groups", {"system:authenticated", "monitoring"}},
              {"extra", {{"scopes", {"read"}}}}}}}}};
}

Json AccessReview(bool allowed, const std::string& reason = "") {
  Json status = {{"allowed", allowed}};
  if (!reason.empty()) status["reason"] = reason;
  return {{"apiVersion", "authorization.k8s.io/v1"},
          {"kind", "SubjectAccessReview"},
          {"status", status}};
}

// A scripted API server that authenticates every token as `user` and answers SubjectAccessReviews
// with `allowed`, plus an injected clock the test moves.
class DelegatedAuthTest : public ::testing::Test {
 protected:
  void AuthenticateAs(const std::string& user) {
    server_.On("POST", kTokenReviews, [user](const RecordedRequest&, httplib::Response& res) {
      ReplyJson(res, 201, AuthenticatedReview(user));
    });
  }
  void Allow(bool allowed, const std::string& reason = "") {
    server_.On("POST", kAccessReviews,
               [allowed, reason](const RecordedRequest&, httplib::Response& res) {
                 ReplyJson(res, 201, AccessReview(allowed, reason));
               });
  }
  DelegatedAuthorizer Authorizer(DelegatedAuthOptions options = {}) {
    return DelegatedAuthorizer(client_, std::move(options), [this] { return now_; });
  }
  size_t TokenReviews() const { return server_.Count("POST", kTokenReviews); }
  size_t AccessReviews() const { return server_.Count("POST", kAccessReviews); }

  FakeApiServer server_;
  Client client_{ConfigFor(server_), FastRetryOptions()};
  std::chrono::steady_clock::time_point now_{std::chrono::hours(1)};
};

TEST_F(DelegatedAuthTest, MissingOrNonBearerHeaderIs401WithoutAnApiCall) {
  AuthenticateAs("alice");
  Allow(true);
  DelegatedAuthorizer authorizer = Authorizer();
  for (const char* header : {"", "   ", "Basic YWxpY2U6cHc=", "Bearer", "Bearer ",
                             "Bearer  two-spaces", "Bearer one two", "Token abc", "Bearerabc"}) {
    const AccessDecision decision = authorizer.Check(header, "/ui", "get");
    EXPECT_EQ(decision.status, 401) << header;
    EXPECT_TRUE(decision.user.empty()) << header;
    EXPECT_FALSE(decision.reason.empty()) << header;
    EXPECT_THAT(decision.reason, Not(HasSubstr("YWxpY2U6cHc="))) << header;
  }
  EXPECT_TRUE(server_.Requests().empty());
  EXPECT_EQ(authorizer.cache_entries(), 0U);
}

TEST_F(DelegatedAuthTest, SchemeIsCaseInsensitive) {
  AuthenticateAs("alice");
  Allow(true);
  DelegatedAuthorizer authorizer = Authorizer();
  EXPECT_EQ(authorizer.Check(std::string("bearer ") + kToken, "/ui", "get").status, 200);
  EXPECT_EQ(authorizer.Check(std::string("BEARER ") + kToken + " ", "/ui", "get").status, 200);
}

TEST_F(DelegatedAuthTest, TokenReviewCarriesTheTokenAndTheAudiences) {
  AuthenticateAs("alice");
  Allow(true);
  DelegatedAuthOptions options;
  options.audiences = {"tessera", "https://kubernetes.default.svc"};
  DelegatedAuthorizer authorizer = Authorizer(options);
  ASSERT_EQ(authorizer.Check(kBearer, "/metrics", "get").status, 200);

  const auto reviews = server_.Requests("POST", kTokenReviews);
  ASSERT_EQ(reviews.size(), 1U);
  const Json body = reviews[0].JsonBody();
  EXPECT_EQ(body["apiVersion"], "authentication.k8s.io/v1");
  EXPECT_EQ(body["kind"], "TokenReview");
  EXPECT_EQ(body["spec"]["token"], kToken);
  EXPECT_EQ(body["spec"]["audiences"], Json({"tessera", "https://kubernetes.default.svc"}));
}

TEST_F(DelegatedAuthTest, NoAudiencesConfiguredSendsNone) {
  AuthenticateAs("alice");
  Allow(true);
  DelegatedAuthorizer authorizer = Authorizer();
  ASSERT_EQ(authorizer.Check(kBearer, "/metrics", "get").status, 200);
  const auto reviews = server_.Requests("POST", kTokenReviews);
  ASSERT_EQ(reviews.size(), 1U);
  EXPECT_FALSE(reviews[0].JsonBody()["spec"].contains("audiences"));
}

TEST_F(DelegatedAuthTest, TokenValidForOtherAudiencesOnlyIs401) {
  server_.On("POST", kTokenReviews, [](const RecordedRequest&, httplib::Response& res) {
    Json review = AuthenticatedReview("alice");
    review["status"]["audiences"] = {"vault"};
    ReplyJson(res, 201, review);
  });
  Allow(true);
  DelegatedAuthOptions options;
  options.audiences = {"tessera"};
  DelegatedAuthorizer authorizer = Authorizer(options);
  const AccessDecision decision = authorizer.Check(kBearer, "/ui", "get");
  EXPECT_EQ(decision.status, 401);
  EXPECT_THAT(decision.reason, HasSubstr("audiences"));
  EXPECT_EQ(AccessReviews(), 0U);
}

TEST_F(DelegatedAuthTest, UnauthenticatedTokenIs401WithoutAnAccessReview) {
  server_.On("POST", kTokenReviews, [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 201,
              Json{{"kind", "TokenReview"},
                   {"status", {{"authenticated", false}, {"error", "token has expired"}}}});
  });
  Allow(true);
  DelegatedAuthorizer authorizer = Authorizer();
  const AccessDecision decision = authorizer.Check(kBearer, "/ui", "get");
  EXPECT_EQ(decision.status, 401);
  EXPECT_TRUE(decision.user.empty());
  EXPECT_THAT(decision.reason, HasSubstr("token has expired"));
  EXPECT_EQ(TokenReviews(), 1U);
  EXPECT_EQ(AccessReviews(), 0U);
}

TEST_F(DelegatedAuthTest, AbsentAuthenticatedMeansUnauthenticated) {
  // authenticated is omitempty in the Go type: an empty status is a rejection.
  server_.On("POST", kTokenReviews, [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 201, Json{{"kind", "TokenReview"}, {"status", Json::object()}});
  });
  DelegatedAuthorizer authorizer = Authorizer();
  EXPECT_EQ(authorizer.Check(kBearer, "/ui", "get").status, 401);
}

TEST_F(DelegatedAuthTest, AccessReviewDenialIs403AndCarriesTheUserAndTheRequest) {
  AuthenticateAs("system:serviceaccount:monitoring:prometheus");
  Allow(false, "no RBAC policy matched");
  DelegatedAuthorizer authorizer = Authorizer();
  const AccessDecision decision = authorizer.Check(kBearer, "/explain", "get");
  EXPECT_EQ(decision.status, 403);
  EXPECT_EQ(decision.user, "system:serviceaccount:monitoring:prometheus");
  EXPECT_THAT(decision.reason, HasSubstr("no RBAC policy matched"));
  EXPECT_THAT(decision.reason, HasSubstr("/explain"));

  const auto reviews = server_.Requests("POST", kAccessReviews);
  ASSERT_EQ(reviews.size(), 1U);
  const Json body = reviews[0].JsonBody();
  EXPECT_EQ(body["apiVersion"], "authorization.k8s.io/v1");
  EXPECT_EQ(body["kind"], "SubjectAccessReview");
  EXPECT_EQ(body["spec"]["user"], "system:serviceaccount:monitoring:prometheus");
  EXPECT_EQ(body["spec"]["groups"], Json({"system:authenticated", "monitoring"}));
  EXPECT_EQ(body["spec"]["uid"], "uid-7");
  EXPECT_EQ(body["spec"]["extra"], Json({{"scopes", {"read"}}}));
  EXPECT_EQ(body["spec"]["nonResourceAttributes"], Json({{"path", "/explain"}, {"verb", "get"}}));
  EXPECT_FALSE(body["spec"].contains("resourceAttributes"));
}

TEST_F(DelegatedAuthTest, AllowedIs200WithTheUser) {
  AuthenticateAs("alice");
  Allow(true, "RBAC: allowed by ClusterRoleBinding \"readers\"");
  DelegatedAuthorizer authorizer = Authorizer();
  const AccessDecision decision = authorizer.Check(kBearer, "/ui/state", "get");
  EXPECT_EQ(decision.status, 200);
  EXPECT_EQ(decision.user, "alice");
  EXPECT_THAT(decision.reason, HasSubstr("readers"));
  EXPECT_EQ(TokenReviews(), 1U);
  EXPECT_EQ(AccessReviews(), 1U);
}

TEST_F(DelegatedAuthTest, SecondCallWithinTtlIsAnsweredFromTheCache) {
  AuthenticateAs("alice");
  Allow(true);
  DelegatedAuthorizer authorizer = Authorizer();
  ASSERT_EQ(authorizer.Check(kBearer, "/ui", "get").status, 200);
  now_ += std::chrono::seconds(9);
  const AccessDecision cached = authorizer.Check(kBearer, "/ui", "get");
  EXPECT_EQ(cached.status, 200);
  EXPECT_EQ(cached.user, "alice");
  EXPECT_EQ(TokenReviews(), 1U);
  EXPECT_EQ(AccessReviews(), 1U);
  EXPECT_EQ(authorizer.cache_entries(), 1U);

  // Another path or verb is another question.
  EXPECT_EQ(authorizer.Check(kBearer, "/metrics", "get").status, 200);
  EXPECT_EQ(authorizer.Check(kBearer, "/ui", "post").status, 200);
  EXPECT_EQ(AccessReviews(), 3U);
  EXPECT_EQ(authorizer.cache_entries(), 3U);
}

TEST_F(DelegatedAuthTest, AfterTheTtlItAsksAgain) {
  AuthenticateAs("alice");
  Allow(true);
  DelegatedAuthorizer authorizer = Authorizer();
  ASSERT_EQ(authorizer.Check(kBearer, "/ui", "get").status, 200);
  now_ += std::chrono::seconds(10);
  Allow(false);  // the binding was removed meanwhile
  EXPECT_EQ(authorizer.Check(kBearer, "/ui", "get").status, 403);
  EXPECT_EQ(TokenReviews(), 2U);
  EXPECT_EQ(AccessReviews(), 2U);
}

TEST_F(DelegatedAuthTest, DeniedAnswersUseTheDeniedTtl) {
  AuthenticateAs("alice");
  Allow(false);
  DelegatedAuthOptions options;
  options.allowed_ttl = std::chrono::seconds(300);
  options.denied_ttl = std::chrono::seconds(2);
  DelegatedAuthorizer authorizer = Authorizer(options);
  ASSERT_EQ(authorizer.Check(kBearer, "/ui", "get").status, 403);
  now_ += std::chrono::seconds(1);
  ASSERT_EQ(authorizer.Check(kBearer, "/ui", "get").status, 403);
  EXPECT_EQ(AccessReviews(), 1U);
  now_ += std::chrono::seconds(1);
  Allow(true);
  EXPECT_EQ(authorizer.Check(kBearer, "/ui", "get").status, 200);
  EXPECT_EQ(AccessReviews(), 2U);
  now_ += std::chrono::seconds(299);
  EXPECT_EQ(authorizer.Check(kBearer, "/ui", "get").status, 200);
  EXPECT_EQ(AccessReviews(), 2U);
}

TEST_F(DelegatedAuthTest, ZeroTtlCachesNothing) {
  AuthenticateAs("alice");
  Allow(true);
  DelegatedAuthOptions options;
  options.allowed_ttl = std::chrono::seconds(0);
  DelegatedAuthorizer authorizer = Authorizer(options);
  ASSERT_EQ(authorizer.Check(kBearer, "/ui", "get").status, 200);
  ASSERT_EQ(authorizer.Check(kBearer, "/ui", "get").status, 200);
  EXPECT_EQ(TokenReviews(), 2U);
  EXPECT_EQ(authorizer.cache_entries(), 0U);
}

TEST_F(DelegatedAuthTest, ApiServerErrorIs503AndNotCached) {
  server_.On("POST", kTokenReviews, [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 500, StatusBody(500, "InternalError", "etcd is sulking"));
  });
  Allow(true);
  DelegatedAuthorizer authorizer = Authorizer();
  const AccessDecision decision = authorizer.Check(kBearer, "/ui", "get");
  EXPECT_EQ(decision.status, 503);
  EXPECT_THAT(decision.reason, HasSubstr("TokenReview"));
  EXPECT_THAT(decision.reason, HasSubstr("500"));
  EXPECT_EQ(authorizer.cache_entries(), 0U);

  AuthenticateAs("alice");  // the API server recovers: the next request asks again
  EXPECT_EQ(authorizer.Check(kBearer, "/ui", "get").status, 200);
  EXPECT_EQ(TokenReviews(), 2U);
}

TEST_F(DelegatedAuthTest, AccessReviewForbiddenToTesseraIs503) {
  // tessera's own ServiceAccount lacks `create` on subjectaccessreviews: a deployment error, not
  // the caller's, so neither 403 nor cached.
  AuthenticateAs("alice");
  server_.On("POST", kAccessReviews, [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 403, StatusBody(403, "Forbidden", "cannot create subjectaccessreviews"));
  });
  DelegatedAuthorizer authorizer = Authorizer();
  const AccessDecision decision = authorizer.Check(kBearer, "/ui", "get");
  EXPECT_EQ(decision.status, 503);
  EXPECT_EQ(decision.user, "alice");
  EXPECT_THAT(decision.reason, HasSubstr("SubjectAccessReview"));
  EXPECT_EQ(authorizer.cache_entries(), 0U);
}

TEST_F(DelegatedAuthTest, UnreachableApiServerIs503) {
  ClusterConfig config;
  config.server = "http://127.0.0.1:1";  // nothing listens on port 1
  ClientOptions options = FastRetryOptions();
  options.max_retries = 0;
  Client unreachable(config, options);
  DelegatedAuthorizer authorizer(unreachable, {}, [this] { return now_; });
  const AccessDecision decision = authorizer.Check(kBearer, "/ui", "get");
  EXPECT_EQ(decision.status, 503);
  EXPECT_FALSE(decision.reason.empty());
  EXPECT_EQ(authorizer.cache_entries(), 0U);
}

TEST_F(DelegatedAuthTest, MalformedAnswersAre503) {
  struct Case {
    const char* name;
    std::string token_review;  // body text
    std::string access_review;
  };
  const std::string good_token_review = AuthenticatedReview("alice").dump();
  const std::string good_access_review = AccessReview(true).dump();
  const std::vector<Case> cases = {
      {"token review not JSON", "<html>proxy error</html>", good_access_review},
      {"token review an array", "[]", good_access_review},
      {"token review without status", R"({"kind": "TokenReview"})", good_access_review},
      {"authenticated a string", R"({"status": {"authenticated": "yes"}})", good_access_review},
      {"no user", R"({"status": {"authenticated": true}})", good_access_review},
      {"empty user name", R"({"status": {"authenticated": true, "user": {"username": ""}}})",
       good_access_review},
      {"groups not a list",
       R"({"status": {"authenticated": true, "user": {"username": "a", "groups": "g"}}})",
       good_access_review},
      {"group not a string",
       R"({"status": {"authenticated": true, "user": {"username": "a", "groups": [1]}}})",
       good_access_review},
      {"extra not a map of lists",
       R"({"status": {"authenticated": true, "user": {"username": "a", "extra": {"k": "v"}}}})",
       good_access_review},
      {"access review not JSON", good_token_review, "{"},
      {"access review without allowed", good_token_review, R"({"status": {}})"},
      {"allowed a string", good_token_review, R"({"status": {"allowed": "true"}})"},
      {"deeply nested", good_token_review, std::string(10000, '[') + std::string(10000, ']')},
  };
  for (const Case& c : cases) {
    FakeApiServer server;
    server.On("POST", kTokenReviews, [&c](const RecordedRequest&, httplib::Response& res) {
      res.status = 201;
      res.set_content(c.token_review, "application/json");
    });
    server.On("POST", kAccessReviews, [&c](const RecordedRequest&, httplib::Response& res) {
      res.status = 201;
      res.set_content(c.access_review, "application/json");
    });
    Client client(ConfigFor(server), FastRetryOptions());
    DelegatedAuthorizer authorizer(client, {}, [this] { return now_; });
    const AccessDecision decision = authorizer.Check(kBearer, "/ui", "get");
    EXPECT_EQ(decision.status, 503) << c.name << ": " << decision.reason;
    EXPECT_FALSE(decision.reason.empty()) << c.name;
    EXPECT_EQ(authorizer.cache_entries(), 0U) << c.name;
  }
}

TEST_F(DelegatedAuthTest, CacheIsBoundedAndDropsTheOldestFirst) {
  AuthenticateAs("alice");
  Allow(true);
  DelegatedAuthOptions options;
  options.max_cache_entries = 3;
  DelegatedAuthorizer authorizer = Authorizer(options);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(authorizer.Check("Bearer token-" + std::to_string(i), "/ui", "get").status, 200);
    now_ += std::chrono::milliseconds(1);
  }
  EXPECT_EQ(authorizer.cache_entries(), 3U);
  EXPECT_EQ(TokenReviews(), 5U);

  // token-4 (newest) is still cached; token-0 (oldest) was dropped and is asked about again.
  ASSERT_EQ(authorizer.Check("Bearer token-4", "/ui", "get").status, 200);
  EXPECT_EQ(TokenReviews(), 5U);
  ASSERT_EQ(authorizer.Check("Bearer token-0", "/ui", "get").status, 200);
  EXPECT_EQ(TokenReviews(), 6U);
  EXPECT_EQ(authorizer.cache_entries(), 3U);
}

TEST_F(DelegatedAuthTest, ReasonNeverContainsTheToken) {
  DelegatedAuthorizer authorizer = Authorizer();
  // An authentication webhook that quotes the token back in its error.
  server_.On("POST", kTokenReviews, [](const RecordedRequest& req, httplib::Response& res) {
    const std::string token = req.JsonBody()["spec"]["token"].get<std::string>();
    ReplyJson(res, 201,
              Json{{"status", {{"authenticated", false}, {"error", "bad token " + token}}}});
  });
  AccessDecision decision = authorizer.Check(kBearer, "/ui", "get");
  EXPECT_EQ(decision.status, 401);
  EXPECT_THAT(decision.reason, Not(HasSubstr(kToken)));
  EXPECT_FALSE(decision.reason.empty());

  // ... and in a failure status message.
  server_.On("POST", kTokenReviews, [](const RecordedRequest& req, httplib::Response& res) {
    const std::string token = req.JsonBody()["spec"]["token"].get<std::string>();
    ReplyJson(res, 500, StatusBody(500, "InternalError", "cannot review " + token));
  });
  decision = authorizer.Check("Bearer another-secret", "/ui", "get");
  EXPECT_EQ(decision.status, 503);
  EXPECT_THAT(decision.reason, Not(HasSubstr("another-secret")));

  // ... and in a SubjectAccessReview reason.
  AuthenticateAs("alice");
  server_.On("POST", kAccessReviews, [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 201, AccessReview(false, std::string("denied for third-secret")));
  });
  decision = authorizer.Check("Bearer third-secret", "/ui", "get");
  EXPECT_EQ(decision.status, 403);
  EXPECT_THAT(decision.reason, Not(HasSubstr("third-secret")));

  // The usual answers never mention it either.
  Allow(false, "no RBAC policy matched");
  for (const char* path : {"/ui", "/metrics", "/explain"}) {
    decision = authorizer.Check(kBearer, path, "get");
    EXPECT_THAT(decision.reason, Not(HasSubstr(kToken))) << path;
  }
}

TEST_F(DelegatedAuthTest, ConcurrentChecksAgree) {
  AuthenticateAs("alice");
  Allow(true);
  DelegatedAuthOptions options;
  options.max_cache_entries = 4;  // small, so eviction runs concurrently with lookups
  DelegatedAuthorizer authorizer(client_, options);  // the real clock: now_ is not atomic
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&authorizer, &wrong, t] {
      for (int i = 0; i < 10; ++i) {
        const std::string header = "Bearer token-" + std::to_string((t + i) % 6);
        if (authorizer.Check(header, "/ui", "get").status != 200) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(authorizer.cache_entries(), 4U);
}

}  // namespace
}  // namespace tessera::kube
