// The extender's HTTP bodies: ExtenderArgs (filter, prioritize), ExtenderBindingArgs (bind),
// AdmissionReview (webhook) and ExtenderPreemptionArgs (preempt), decoded and answered by the
// extender verbs over a small cluster. Any input must give an answer, never a crash, and leave no
// reservation behind a failed filter.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/codec/node_register.h"
#include "core/extender/extender_args_decoder.h"
#include "scheduler/extender_verbs.h"

namespace {

using tessera::Status;
using tessera::scheduler::AnnotationChanges;
using tessera::scheduler::BindingAnnotations;
using tessera::scheduler::PodRef;

class NullWriter : public tessera::scheduler::ClusterWriter {
 public:
  Status PatchPodAnnotations(const PodRef&, const AnnotationChanges&) override {
    return Status::Ok();
  }
  Status BindPod(const PodRef&, const std::string&, const BindingAnnotations&) override {
    return Status::Ok();
  }
  void RecordEvent(const PodRef&, bool, const std::string&, const std::string&) override {}
  Status LockNode(const std::string&, const PodRef&) override { return Status::Ok(); }
  Status UnlockNode(const std::string&, const PodRef&) override { return Status::Ok(); }
};

// The cluster view over one node, and the verbs over it: built once, as in production.
struct Served {
  NullWriter writer;
  tessera::scheduler::ClusterView view{tessera::config::SchedulerConfig{}, {}, writer};
  tessera::scheduler::ExtenderVerbs verbs{view, writer};
};

Served& Service() {
  static Served* served = [] {
    auto* s = new Served;
    tessera::model::GpuDevice gpu;
    gpu.uuid = "GPU-0";
    gpu.count = 10;
    gpu.total_mem_mib = 32768;
    gpu.total_cores = 100;
    gpu.type = "NVIDIA-Tesla V100";
    gpu.healthy = true;
    tessera::model::Node node;
    node.name = "n1";
    node.annotations["hami.io/node-nvidia-register"] = tessera::codec::EncodeNodeRegister({gpu});
    s->view.UpsertNodeModel(node);
    s->view.SetSynced(true);
    return s;
  }();
  return *served;
}

// The on-demand decoder the verbs use must decode exactly as DecodeExtenderArgs does.
void CheckDecodersAgree(const std::string& body) {
  static tessera::extender::ExtenderArgsDecoder decoder;
  auto fast = decoder.Decode(body);
  auto general = tessera::extender::DecodeExtenderArgs(body);
  if (fast.ok() != general.ok()) __builtin_trap();
  if (!fast.ok()) {
    if (fast.error().message != general.error().message) __builtin_trap();
    return;
  }
  if (fast->pod != general->pod || fast->node_names != general->node_names ||
      fast->nodes != general->nodes) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  Served& served = Service();
  auto& verbs = served.verbs;
  switch (data[0] % 5) {
    case 0:
      CheckDecodersAgree(body);
      (void)verbs.Filter(body);
      break;
    case 1:
      (void)verbs.Bind(body);
      break;
    case 2:
      (void)verbs.Prioritize(body);
      break;
    case 3:
      (void)verbs.Webhook(body);
      break;
    default:
      (void)verbs.Preempt(body);
      break;
  }
  // Keep the cluster from filling up: every reservation goes, whatever the input was.
  served.view.ReplacePods({});
  return 0;
}
