#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/name_list_budget.h"

namespace tessera::scheduler {

// The nodes each pod's last filter offered kube-scheduler, by pod key and uid, and the node it
// was bound to once it is: bind goes only where filter said, and a repeated bind of a bound pod
// is answered without writing. The caller removes a pod's answer when the pod goes away (and
// expires answers of pods only a filter told about); the names of pass-through answers (every
// candidate node) are held within a budget, the oldest answers giving way first. Not
// thread-safe: the caller's lock.
class FilterAnswers {
 public:
  using Names = NameListBudget::Names;
  static constexpr size_t kMaxHeldNames = size_t{1} << 18;

  explicit FilterAnswers(size_t max_held_names = kMaxHeldNames) : lists_(max_held_names) {}

  // The filter placed the pod on `node`.
  void Placed(const std::string& key, const std::string& uid, const std::string& node) {
    Entry& e = Renew(key, uid);
    e.node = node;
  }
  // The filter let the pod through to every node in `nodes` (a pod without GPUs). Returns false
  // when the list alone is beyond the budget: then nothing is offered.
  bool PassedThrough(const std::string& key, const std::string& uid, const Names& nodes) {
    const uint64_t mine = Renew(key, uid).age;
    std::shared_ptr<const Names> list = lists_.Copy(nodes);
    while (list == nullptr && !by_age_.empty() && by_age_.begin()->first != mine) {
      const std::string oldest = by_age_.begin()->second;  // the oldest answers give way
      Forget(oldest);
      list = lists_.Copy(nodes);
    }
    if (list == nullptr) {
      Forget(key);
      return false;
    }
    answers_[key].nodes = std::move(list);
    return true;
  }
  // The pod was bound to `node` (by our bind, or as the cluster shows it). Only a pod with an
  // answer for this uid is remembered: one never filtered here is no bind's business.
  void Bound(const std::string& key, const std::string& uid, const std::string& node) {
    auto it = answers_.find(key);
    if (it != answers_.end() && it->second.uid == uid) it->second.bound_node = node;
  }
  void Forget(const std::string& key) {
    auto it = answers_.find(key);
    if (it == answers_.end()) return;
    by_age_.erase(it->second.age);
    answers_.erase(it);
  }

  // The pod of this key is now another (a new uid): its predecessor's answer is no bind's.
  void ForgetOtherUid(const std::string& key, const std::string& uid) {
    auto it = answers_.find(key);
    if (it != answers_.end() && it->second.uid != uid) Forget(key);
  }
  template <class Pred>
  void ForgetIf(Pred forget) {
    std::vector<std::string> keys;
    for (const auto& [key, e] : answers_) {
      if (forget(key)) keys.push_back(key);
    }
    for (const auto& key : keys) Forget(key);
  }

  enum class Verdict {
    kOffered,         // the last filter offered this node: bind it
    kAlreadyBound,    // bound to this node already: nothing to do
    kBoundElsewhere,  // bound to another node
    kNotOffered,      // the last filter did not offer this node
    kOtherUid,        // the last filter was for another pod of the same name
    kNoAnswer,        // never filtered here (or forgotten since)
  };
  struct Check {
    Verdict verdict = Verdict::kNoAnswer;
    std::string bound_node;  // kAlreadyBound, kBoundElsewhere
  };
  Check ForBind(const std::string& key, const std::string& uid, const std::string& node) const {
    auto it = answers_.find(key);
    if (it == answers_.end()) return {};
    const Entry& e = it->second;
    if (e.uid != uid) return {Verdict::kOtherUid, ""};
    if (!e.bound_node.empty()) {
      return {e.bound_node == node ? Verdict::kAlreadyBound : Verdict::kBoundElsewhere,
              e.bound_node};
    }
    const bool offered = e.nodes != nullptr
                             ? std::find(e.nodes->begin(), e.nodes->end(), node) != e.nodes->end()
                             : e.node == node;
    return {offered ? Verdict::kOffered : Verdict::kNotOffered, ""};
  }

  size_t size() const { return answers_.size(); }
  bool Contains(const std::string& key) const { return answers_.count(key) > 0; }
  // Names held by pass-through answers, each distinct list once.
  size_t held_names() const { return lists_.held(); }

 private:
  struct Entry {
    std::string uid;
    std::string node;                    // a placement's node
    std::shared_ptr<const Names> nodes;  // a pass-through's candidates (then `node` is empty)
    std::string bound_node;
    uint64_t age = 0;  // key in by_age_
  };

  // A fresh answer for the pod, the newest of all.
  Entry& Renew(const std::string& key, const std::string& uid) {
    Entry& e = answers_[key];
    by_age_.erase(e.age);
    e = Entry{};
    e.uid = uid;
    e.age = ++last_age_;
    by_age_.emplace(e.age, key);
    return e;
  }

  std::map<std::string, Entry> answers_;
  std::map<uint64_t, std::string> by_age_;  // oldest first
  uint64_t last_age_ = 0;
  NameListBudget lists_;
};

}  // namespace tessera::scheduler
