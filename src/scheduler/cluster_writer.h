#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/common/result.h"

namespace tessera::scheduler {

struct PodRef {
  std::string ns;
  std::string name;
  std::string uid;
  std::string Key() const { return ns + "/" + name; }
};

// Pod annotations to set (a value) or to remove (nullopt).
using AnnotationChanges = std::map<std::string, std::optional<std::string>>;
// Annotations a Binding carries: the API server sets them on the pod in the same write that sets
// its node (it can only set, not remove, a key).
using BindingAnnotations = std::map<std::string, std::string>;

// What the extender writes to the cluster. The Kubernetes API client implements it for a real
// cluster, the embedded cluster for `serve --cluster`, tests with fakes. Calls may block on the
// network; the service never holds its lock while calling.
class ClusterWriter {
 public:
  virtual ~ClusterWriter() = default;
  virtual Status PatchPodAnnotations(const PodRef& pod, const AnnotationChanges& changes) = 0;
  virtual Status BindPod(const PodRef& pod, const std::string& node,
                         const BindingAnnotations& annotations) = 0;
  // Best effort, never blocks for long (rate-limited and queued by implementations).
  virtual void RecordEvent(const PodRef& pod, bool warning, const std::string& reason,
                           const std::string& message) = 0;
  // HAMi's node lock (hami.io/mutex.lock), written only in --node-lock=hami mode because HAMi's
  // device plugin finds the pod it is allocating through it.
  virtual Status LockNode(const std::string& node, const PodRef& pod) = 0;
  virtual Status UnlockNode(const std::string& node, const PodRef& pod) = 0;
};

}  // namespace tessera::scheduler
