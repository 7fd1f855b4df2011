// The extender's HTTP bodies: ExtenderArgs (filter, prioritize), ExtenderBindingArgs (bind) and
// AdmissionReview (webhook), decoded and answered by a live service over a small cluster. Any
// input must give an answer, never a crash, and leave no reservation behind a failed filter.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/codec/node_register.h"
#include "core/extender/extender_args_decoder.h"
#include "scheduler/extender_service.h"

namespace {

using tessera::Status;
using tessera::scheduler::AnnotationChanges;
using tessera::scheduler::PodRef;

class NullWriter : public tessera::scheduler::ClusterWriter {
 public:
  Status PatchPodAnnotations(const PodRef&, const AnnotationChanges&) override {
    return Status::Ok();
  }
  Status BindPod(const PodRef&, const std::string&) override { return Status::Ok(); }
  void RecordEvent(const PodRef&, bool, const std::string&, const std::string&) override {}
  Status LockNode(const std::string&, const PodRef&) override { return Status::Ok(); }
  Status UnlockNode(const std::string&, const PodRef&) override { return Status::Ok(); }
};

tessera::scheduler::ExtenderService& Service() {
  static NullWriter writer;
  static tessera::scheduler::ExtenderService* service = [] {
    auto* s =
        new tessera::scheduler::ExtenderService(tessera::config::SchedulerConfig{}, {}, writer);
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
    s->UpsertNodeModel(node);
    s->SetSynced(true);
    return s;
  }();
  return *service;
}

// The on-demand decoder the service uses must decode exactly as DecodeExtenderArgs does.
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
  auto& service = Service();
  switch (data[0] % 4) {
    case 0:
      CheckDecodersAgree(body);
      (void)service.Filter(body);
      break;
    case 1:
      (void)service.Bind(body);
      break;
    case 2:
      (void)service.Prioritize(body);
      break;
    default:
      (void)service.Webhook(body);
      break;
  }
  // Keep the cluster from filling up: every reservation goes, whatever the input was.
  service.ReplacePods({});
  return 0;
}
