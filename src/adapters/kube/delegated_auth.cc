#include "adapters/kube/delegated_auth.h"

#include <openssl/evp.h>

#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/kube/json_text.h"
#include "core/codec/json_util.h"
#include "core/common/strings.h"

namespace tessera::kube {
namespace {

constexpr const char* kTokenReviewPath = "/apis/authentication.k8s.io/v1/tokenreviews";
constexpr const char* kSubjectAccessReviewPath =
    "/apis/authorization.k8s.io/v1/subjectaccessreviews";
// Reasons reach response bodies and logs; an API server message is cut to keep them short.
constexpr size_t kMaxReasonBytes = 1024;

// The identity a TokenReview authenticated, as SubjectAccessReview spec wants it.
struct ReviewedUser {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
  Json extra = Json::object();  // map of string to list of strings
};

AccessDecision Decision(int status, std::string user, std::string reason) {
  return AccessDecision{status, std::move(user), std::move(reason)};
}

bool IsSpaceOrTab(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimSpaces(std::string_view text) {
  while (!text.empty() && IsSpaceOrTab(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpaceOrTab(text.back())) text.remove_suffix(1);
  return text;
}

// The token of "Bearer TOKEN" (scheme case-insensitive, as RFC 7235 and k8s.io/apiserver's
// bearer-token authenticator read it); nullopt for anything else. Whitespace inside the token is
// refused rather than cut at, so a mangled header never authenticates as a prefix of itself.
std::optional<std::string_view> BearerToken(std::string_view header) {
  header = TrimSpaces(header);
  const size_t space = header.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  if (!EqualsIgnoreCase(header.substr(0, space), "bearer")) return std::nullopt;
  const std::string_view token = header.substr(space + 1);
  if (token.empty()) return std::nullopt;
  for (char c : token) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return std::nullopt;
  }
  return token;
}

// At most kMaxReasonBytes, cut before a UTF-8 continuation byte so that the text stays valid.
std::string CutReason(std::string reason) {
  if (reason.size() <= kMaxReasonBytes) return reason;
  size_t end = kMaxReasonBytes;
  while (end > 0 && (static_cast<unsigned char>(reason[end]) & 0xC0) == 0x80) --end;
  reason.resize(end);
  return reason + "...";
}

// The API server's messages are quoted into reasons, and one might quote the token back (an
// authentication webhook echoing its input): such a reason is replaced by a generic one.
std::string WithoutToken(std::string reason, std::string_view token, int status) {
  if (token.empty() || reason.find(token) == std::string::npos) return reason;
  std::string generic = status == 200   ? "allowed"
                        : status == 401 ? "unauthenticated"
                        : status == 403 ? "forbidden"
                                        : "the API server could not be asked";
  std::string explained = generic + " (the API server's message quoted the token)";
  if (explained.find(token) == std::string::npos) return explained;
  if (generic.find(token) == std::string::npos) return generic;
  return "";
}

// "; <label>: <text>" when text is not empty.
std::string Detail(const std::string& label, const std::string& text) {
  return text.empty() ? "" : "; " + label + ": " + text;
}

Status ReadStringList(const Json& object, std::string_view key, const std::string& where,
                      std::vector<std::string>* out) {
  const Json* list = codec::FindKey(object, key);
  if (list == nullptr || list->is_null()) return Status::Ok();
  if (!list->is_array()) return Error{where + "." + std::string(key) + ": not a list"};
  for (const Json& item : *list) {
    if (!item.is_string()) {
      return Error{where + "." + std::string(key) + ": " + codec::DescribeJsonValue(item) +
                   " is not a string"};
    }
    out->push_back(item.get<std::string>());
  }
  return Status::Ok();
}

// status.user of an authenticated TokenReview; every field is checked for its type, so a
// malformed answer is an error here rather than a wrong SubjectAccessReview later.
Result<ReviewedUser> ReadReviewedUser(const Json& review_status) {
  const std::string where = "TokenReview status.user";
  const Json* user = codec::FindKey(review_status, "user");
  if (user == nullptr || !user->is_object()) return Error{where + ": missing or not an object"};
  ReviewedUser reviewed;
  if (Status s = codec::ReadString(*user, "username", where, &reviewed.name); !s) {
    return Error{s.message()};
  }
  if (reviewed.name.empty()) return Error{where + ".username: empty"};
  if (Status s = codec::ReadString(*user, "uid", where, &reviewed.uid); !s) {
    return Error{s.message()};
  }
  if (Status s = ReadStringList(*user, "groups", where, &reviewed.groups); !s) {
    return Error{s.message()};
  }
  if (const Json* extra = codec::FindKey(*user, "extra"); extra != nullptr && !extra->is_null()) {
    if (!extra->is_object()) return Error{where + ".extra: not an object"};
    for (const auto& [key, values] : extra->items()) {
      std::vector<std::string> list;
      if (Status s = ReadStringList(*extra, key, where + ".extra", &list); !s) {
        return Error{s.message()};
      }
      reviewed.extra[key] = list;
    }
  }
  return reviewed;
}

// The response's status object, or an error naming what is wrong with the response.
Result<Json> ReviewStatus(const Response& response, const std::string& kind) {
  if (!response.ok()) {
    return Error{kind + " could not be created: " + response.Describe(), ErrorCode::kUnavailable};
  }
  auto body = codec::ParseJson(response.body, kind + " response");
  if (!body.ok()) return body.error();
  if (!body->is_object()) return Error{kind + " response: not a JSON object"};
  const Json* status = codec::FindKey(*body, "status");
  if (status == nullptr || !status->is_object()) {
    return Error{kind + " response: status missing or not an object"};
  }
  return *status;
}

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

}  // namespace

DelegatedAuthorizer::DelegatedAuthorizer(Client& client, DelegatedAuthOptions options,
                                         NowFunction now)
    : client_(client),
      options_(std::move(options)),
      now_(now ? std::move(now) : NowFunction(SteadyClockNow)) {}

AccessDecision DelegatedAuthorizer::Check(std::string_view authorization_header,
                                          std::string_view path, std::string_view verb) {
  if (TrimSpaces(authorization_header).empty()) {
    return Decision(401, "", "no Authorization header: send \"Authorization: Bearer <token>\"");
  }
  const std::optional<std::string_view> token = BearerToken(authorization_header);
  if (!token) {
    // The header is not echoed: it may be a credential of another scheme.
    return Decision(401, "", "the Authorization header is not \"Bearer <token>\"");
  }
  const std::string key = CacheKey(*token, path, verb);
  AccessDecision decision;
  if (!key.empty() && Lookup(key, &decision)) return decision;

  decision = AskApiServer(std::string(*token), path, verb);
  decision.reason = WithoutToken(CutReason(std::move(decision.reason)), *token, decision.status);
  // A failure to ask says nothing about the token: the next request asks again.
  if (!key.empty() && decision.status != 503) Store(key, decision);
  return decision;
}

size_t DelegatedAuthorizer::cache_entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

std::string DelegatedAuthorizer::CacheKey(std::string_view token, std::string_view path,
                                          std::string_view verb) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  if (EVP_Digest(token.data(), token.size(), digest, &digest_size, EVP_sha256(), nullptr) != 1) {
    return "";  // not cached; never reached with a working libcrypto
  }
  // The digest has a fixed size and the verb is length-prefixed, so no two inputs share a key.
  std::string key(reinterpret_cast<const char*>(digest), digest_size);
  key += std::to_string(verb.size());
  key += ':';
  key += verb;
  key += path;
  return key;
}

bool DelegatedAuthorizer::Lookup(const std::string& key, AccessDecision* decision) {
  const auto now = now_();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it == cache_.end()) return false;
  if (now >= it->second.expires_at) {
    insertion_order_.erase(it->second.age_position);
    cache_.erase(it);
    return false;
  }
  *decision = it->second.decision;
  return true;
}

void DelegatedAuthorizer::Store(const std::string& key, const AccessDecision& decision) {
  const std::chrono::seconds ttl =
      decision.status == 200 ? options_.allowed_ttl : options_.denied_ttl;
  if (ttl <= std::chrono::seconds::zero() || options_.max_cache_entries == 0) return;
  const auto expires_at = now_() + ttl;
  std::lock_guard<std::mutex> lock(mu_);
  // A concurrent Check of the same key may have stored first; the newer answer replaces it.
  if (auto it = cache_.find(key); it != cache_.end()) {
    insertion_order_.erase(it->second.age_position);
    cache_.erase(it);
  }
  while (cache_.size() >= options_.max_cache_entries) {
    cache_.erase(insertion_order_.front());
    insertion_order_.pop_front();
  }
  insertion_order_.push_back(key);
  cache_.emplace(key, CachedDecision{decision, expires_at, std::prev(insertion_order_.end())});
}

AccessDecision DelegatedAuthorizer::AskApiServer(const std::string& token, std::string_view path,
                                                 std::string_view verb) {
  Json token_review = {{"apiVersion", "authentication.k8s.io/v1"},
                       {"kind", "TokenReview"},
                       {"spec", {{"token", token}}}};
  if (!options_.audiences.empty()) token_review["spec"]["audiences"] = options_.audiences;
  const Result<Json> review =
      ReviewStatus(client_.Post(kTokenReviewPath, ToJsonText(token_review)), "TokenReview");
  if (!review.ok()) return Decision(503, "", review.error().message);

  bool authenticated = false;
  if (Status s = codec::ReadBool(*review, "authenticated", "TokenReview status", &authenticated);
      !s) {
    return Decision(503, "", s.message());
  }
  if (!authenticated) {
    std::string error;
    (void)codec::ReadString(*review, "error", "TokenReview status", &error);  // optional text
    return Decision(401, "", "the token is not valid" + Detail("API server", error));
  }
  Result<ReviewedUser> user = ReadReviewedUser(*review);
  if (!user.ok()) return Decision(503, "", user.error().message);
  if (!options_.audiences.empty()) {
    // status.audiences, when given, is the subset of spec.audiences the token is valid for.
    std::vector<std::string> token_audiences;
    if (Status s = ReadStringList(*review, "audiences", "TokenReview status", &token_audiences);
        !s) {
      return Decision(503, user->name, s.message());
    }
    bool shares_an_audience = token_audiences.empty();
    for (const std::string& audience : token_audiences) {
      for (const std::string& wanted : options_.audiences) {
        shares_an_audience = shares_an_audience || audience == wanted;
      }
    }
    if (!shares_an_audience) {
      return Decision(401, user->name, "the token is not valid for this server's audiences");
    }
  }

  Json spec = {
      {"user", user->name},
      {"nonResourceAttributes", {{"path", std::string(path)}, {"verb", std::string(verb)}}}};
  // omitempty, as the Go types serialise them.
  if (!user->groups.empty()) spec["groups"] = user->groups;
  if (!user->uid.empty()) spec["uid"] = user->uid;
  if (!user->extra.empty()) spec["extra"] = user->extra;
  const Json access_review = {{"apiVersion", "authorization.k8s.io/v1"},
                              {"kind", "SubjectAccessReview"},
                              {"spec", std::move(spec)}};
  const Result<Json> access = ReviewStatus(
      client_.Post(kSubjectAccessReviewPath, ToJsonText(access_review)), "SubjectAccessReview");
  if (!access.ok()) return Decision(503, user->name, access.error().message);

  // `allowed` is not omitempty in the Go type: an answer without it is not a review.
  if (const Json* allowed = codec::FindKey(*access, "allowed");
      allowed == nullptr || !allowed->is_boolean()) {
    return Decision(503, user->name, "SubjectAccessReview status.allowed: missing or not a bool");
  }
  bool allowed = false;
  std::string reason, evaluation_error;
  (void)codec::ReadBool(*access, "allowed", "", &allowed);
  (void)codec::ReadString(*access, "reason", "", &reason);  // optional texts: wrong types ignored
  (void)codec::ReadString(*access, "evaluationError", "", &evaluation_error);
  if (allowed) return Decision(200, user->name, reason.empty() ? "allowed" : reason);
  return Decision(403, user->name,
                  "user " + Quoted(user->name) + " may not " + std::string(verb) + " " +
                      std::string(path) + Detail("API server", reason) +
                      Detail("evaluation error", evaluation_error));
}

}  // namespace tessera::kube
