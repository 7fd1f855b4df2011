#include "core/extender/admission_review.h"

#include <gtest/gtest.h>

#include "core/common/strings.h"
#include "support/builders.h"

namespace tessera::extender {
namespace {

using codec::Json;

Json Review(const std::string& api_version, const Json& pod) {
  return {{"apiVersion", api_version},
          {"kind", "AdmissionReview"},
          {"request", {{"uid", "req-1"}, {"operation", "CREATE"}, {"object", pod}}}};
}

Json GpuPod(const Json& limits) {
  return {{"metadata", {{"name", "p"}, {"namespace", "ns"}}},
          {"spec", {{"containers", {{{"name", "c0"}, {"resources", {{"limits", limits}}}}}}}}};
}

Json Answer(const Json& review) {
  auto req = DecodeAdmissionReview(review.dump());
  EXPECT_TRUE(req.ok()) << req.error().message;
  return Json::parse(EncodeAdmissionReview(*req, ReviewPod(req->object, {}, {})));
}

Json Patch(const Json& answer) {
  std::string raw;
  EXPECT_TRUE(Base64Decode(answer["response"]["patch"].get<std::string>(), &raw));
  return Json::parse(raw);
}

TEST(AdmissionReview, SetsSchedulerNameForGpuPodsAndEchoesUidAndVersion) {
  Json a = Answer(Review("admission.k8s.io/v1",
                         GpuPod({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8000"}})));
  EXPECT_EQ(a["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(a["kind"], "AdmissionReview");
  EXPECT_EQ(a["response"]["uid"], "req-1");
  EXPECT_TRUE(a["response"]["allowed"].get<bool>());
  EXPECT_EQ(a["response"]["patchType"], "JSONPatch");
  Json patch = Patch(a);
  ASSERT_EQ(patch.size(), 1u);
  EXPECT_EQ(patch[0], Json::parse(R"({"op":"add","path":"/spec/schedulerName",)"
                                  R"("value":"tessera-scheduler"})"));
}

TEST(AdmissionReview, ARequestJustAboveAMigProfileIsAdmittedWithAWarning) {
  const std::vector<sched::MigGpuKind> kinds{
      {"NVIDIA A100-SXM4-40GB", mig::GpuMigModel(testing::A100Mig("GPU-a"), nullptr)}};
  const MigKindsSource source = [&] { return kinds; };
  const Json review = Review("admission.k8s.io/v1",
                             GpuPod({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "20000"}}));
  auto req = DecodeAdmissionReview(review.dump());
  ASSERT_TRUE(req.ok());
  const Json a = Json::parse(
      EncodeAdmissionReview(*req, ReviewPod(req->object, {}, {}, std::nullopt, source)));
  EXPECT_TRUE(a["response"]["allowed"].get<bool>());
  ASSERT_EQ(a["response"]["warnings"].size(), 1U) << a.dump();
  EXPECT_EQ(a["response"]["warnings"][0],
            "container c0 asks 20000 MiB, 32 MiB over 3g.20gb (19968 MiB) on NVIDIA "
            "A100-SXM4-40GB, so it takes a 7g.40gb (40192 MiB): ask at most 19968 MiB to fit "
            "3g.20gb");
  // At the profile's memory, no warning at all.
  const Json fits = Review("admission.k8s.io/v1",
                           GpuPod({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "19968"}}));
  auto fits_req = DecodeAdmissionReview(fits.dump());
  ASSERT_TRUE(fits_req.ok());
  const Json b = Json::parse(
      EncodeAdmissionReview(*fits_req, ReviewPod(fits_req->object, {}, {}, std::nullopt, source)));
  EXPECT_FALSE(b["response"].contains("warnings")) << b.dump();
}

// Reading the cluster's MIG models walks its nodes: a pod that asks no GPU must not pay for it.
TEST(AdmissionReview, APodWithoutGpusNeverReadsTheClusterMigModels) {
  int reads = 0;
  const MigKindsSource counting = [&] {
    ++reads;
    return std::vector<sched::MigGpuKind>{};
  };
  const Json plain = {{"metadata", {{"name", "web"}, {"namespace", "ns"}}},
                      {"spec", {{"containers", {{{"name", "c0"}}}}}}};
  EXPECT_TRUE(ReviewPod(plain, {}, {}, std::nullopt, counting).allowed);
  EXPECT_EQ(reads, 0);
  ReviewPod(GpuPod({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8000"}}), {}, {}, std::nullopt,
            counting);
  EXPECT_EQ(reads, 1);
}

TEST(AdmissionReview, AnswersV1beta1InItsOwnVersion) {
  Json a = Answer(Review("admission.k8s.io/v1beta1", GpuPod({{"nvidia.com/gpu", "1"}})));
  EXPECT_EQ(a["apiVersion"], "admission.k8s.io/v1beta1");
}

TEST(AdmissionReview, WholeCardDefaultAddsCoresLimitWithEscapedPath) {
  Json a = Answer(Review("admission.k8s.io/v1", GpuPod({{"nvidia.com/gpu", "1"}})));
  Json patch = Patch(a);
  ASSERT_EQ(patch.size(), 2u);
  EXPECT_EQ(patch[0]["path"], "/spec/containers/0/resources/limits/nvidia.com~1gpucores");
  EXPECT_EQ(patch[0]["value"], "100");
}

TEST(AdmissionReview, CreatesResourcesAndLimitsWhenAbsent) {
  // gpumem only in requests: the count default goes into limits, which do not exist yet.
  Json pod = {
      {"metadata", {{"name", "p"}}},
      {"spec",
       {{"containers",
         {{{"name", "c0"}, {"resources", {{"requests", {{"nvidia.com/gpumem", "1000"}}}}}}}}}}};
  config::NvidiaConfig cfg;
  cfg.default_gpu_num = 1;
  // Requests alone do not trigger HAMi's count default; limits do.
  Json pod2 = {{"metadata", {{"name", "p"}}}, {"spec", {{"containers", {{{"name", "c0"}}}}}}};
  pod2["spec"]["containers"][0]["resources"] = Json::object();
  AdmissionVerdict none = ReviewPod(pod2, {}, cfg);
  EXPECT_TRUE(none.allowed);
  EXPECT_TRUE(none.patch.empty());
  Json limited = GpuPod({{"nvidia.com/gpumem", "1000"}});
  AdmissionVerdict v = ReviewPod(limited, {}, cfg);
  ASSERT_TRUE(v.allowed) << v.message;
  ASSERT_FALSE(v.patch.empty());
  EXPECT_EQ(v.patch[0]["path"], "/spec/containers/0/resources/limits/nvidia.com~1gpu");
  EXPECT_EQ(v.patch[0]["value"], "1");
  (void)pod;
}

TEST(AdmissionReview, PodWithoutGpuIsUntouched) {
  Json pod = GpuPod({{"cpu", "1"}});
  AdmissionVerdict v = ReviewPod(pod, {}, {});
  EXPECT_TRUE(v.allowed);
  EXPECT_TRUE(v.patch.empty());
}

TEST(AdmissionReview, PodOfAnotherSchedulerIsSkipped) {
  Json pod = GpuPod({{"nvidia.com/gpu", "1"}});
  pod["spec"]["schedulerName"] = "volcano";
  AdmissionVerdict v = ReviewPod(pod, {}, {});
  EXPECT_TRUE(v.allowed);
  EXPECT_TRUE(v.patch.empty());
  EXPECT_EQ(v.message, "pod already has different scheduler assigned");
}

TEST(AdmissionReview, DefaultSchedulerIsTakenOverUnlessDisabled) {
  Json pod = GpuPod({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "10"}});
  pod["spec"]["schedulerName"] = "default-scheduler";
  EXPECT_EQ(ReviewPod(pod, {}, {}).patch.size(), 1u);
  WebhookOptions keep;
  keep.force_overwrite_default_scheduler = false;
  EXPECT_TRUE(ReviewPod(pod, keep, {}).patch.empty());
}

TEST(AdmissionReview, DeniesPercentageOutOfRangeWithContainerNamed) {
  AdmissionVerdict v =
      ReviewPod(GpuPod({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "150"}}), {}, {});
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.message,
            "pod ns/p: invalid nvidia.com/gpumem-percentage value 150 in container c0: must be "
            "an integer between 0 and 100");
}

TEST(AdmissionReview, DeniesUnusableQuantityThatHamiWouldSilentlyIgnore) {
  AdmissionVerdict v =
      ReviewPod(GpuPod({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "lots"}}), {}, {});
  EXPECT_FALSE(v.allowed);
  EXPECT_NE(v.message.find("nvidia.com/gpumem"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("c0"), std::string::npos) << v.message;
}

TEST(AdmissionReview, DeniesPrivilegedGpuContainer) {
  Json pod = GpuPod({{"nvidia.com/gpu", "1"}});
  pod["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  AdmissionVerdict v = ReviewPod(pod, {}, {});
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.message, "pod ns/p: container c0 is privileged");
}

TEST(AdmissionReview, DeniesPresetNodeName) {
  Json pod = GpuPod({{"nvidia.com/gpu", "1"}});
  pod["spec"]["nodeName"] = "n1";
  AdmissionVerdict v = ReviewPod(pod, {}, {});
  EXPECT_FALSE(v.allowed);
  EXPECT_EQ(v.message, "pod ns/p: pod has node assigned");
}

TEST(AdmissionReview, DeniedAnswerCarriesStatus) {
  Json pod = GpuPod({{"nvidia.com/gpu", "1"}});
  pod["spec"]["nodeName"] = "n1";
  Json a = Answer(Review("admission.k8s.io/v1", pod));
  EXPECT_FALSE(a["response"]["allowed"].get<bool>());
  EXPECT_EQ(a["response"]["status"]["code"], 403);
  EXPECT_FALSE(a["response"].contains("patch"));
}

TEST(AdmissionReview, DecodeErrorsNameTheField) {
  EXPECT_EQ(DecodeAdmissionReview(R"({"apiVersion":"admission.k8s.io/v1"})").error().message,
            "AdmissionReview.request: missing");
  EXPECT_EQ(DecodeAdmissionReview(R"({"request":{"object":{}}})").error().message,
            "AdmissionReview.request.uid: missing");
  EXPECT_NE(DecodeAdmissionReview(R"({"apiVersion":"v2","request":{}})")
                .error()
                .message.find("unsupported"),
            std::string::npos);
  Json err = Json::parse(EncodeAdmissionError("", "", "bad"));
  EXPECT_FALSE(err["response"]["allowed"].get<bool>());
  EXPECT_EQ(err["response"]["status"]["code"], 400);
}

}  // namespace
}  // namespace tessera::extender
