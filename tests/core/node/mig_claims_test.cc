#include "core/node/mig_claims.h"

#include <gtest/gtest.h>

#include "core/model/annotations.h"

namespace tessera::node {
namespace {

model::Pod Pod(const std::string& name, const std::string& node, const std::string& allocations,
               const std::string& phase = "Running") {
  model::Pod p;
  p.name = name;
  p.uid = "uid-" + name;
  p.node_name = node;
  p.phase = phase;
  p.annotations[std::string(model::annotations::kMigAllocations)] = allocations;
  return p;
}

const char* kTwo =
    R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-r","profile":"1g.24gb","placement":{"start":9,"size":3}},)"
    R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"GPU-r","profile":"1g.24gb","placement":{"start":6,"size":3}}])";

TEST(MigClaimsTest, LivePodsOnTheNodeHoldTheirInstancesTerminatingOnesToo) {
  model::Pod terminating = Pod("t", "n1", kTwo);
  terminating.deleting = true;
  auto claims =
      ClaimsOnNode({Pod("a", "n1", kTwo), Pod("done", "n1", kTwo, "Succeeded"),
                    Pod("failed", "n1", kTwo, "Failed"), Pod("elsewhere", "n2", kTwo), terminating},
                   "n1");
  ASSERT_EQ(claims.claims.size(), 2U);
  EXPECT_EQ(claims.claims[0].pod, "default/a");
  EXPECT_EQ(claims.claims[0].allocations.size(), 2U);
  EXPECT_EQ(claims.claims[1].pod, "default/t");  // containers may still run (HAMi W3)
  EXPECT_TRUE(claims.problems.empty());
}

TEST(MigClaimsTest, AnUnreadableAnnotationHoldsEveryGpuItNames) {
  model::Pod bad =
      Pod("bad", "n1",
          R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-x","profile":"1g.24gb",)"
          R"("placement":{"start":9,"size":3}},{"containerIndex":0,"deviceIndex":0,)"
          R"("gpuUUID":"GPU-y","profile":"1g.24gb","placement":{"start":6,"size":3}}])");
  bad.annotations[std::string(model::annotations::kDevicesAllocated)] = "GPU-z,NVIDIA,24192,25:;";
  auto claims = ClaimsOnNode({bad, Pod("a", "n1", kTwo)}, "n1");
  ASSERT_EQ(claims.claims.size(), 1U);
  ASSERT_EQ(claims.problems.size(), 1U);
  EXPECT_NE(claims.problems[0].find("default/bad"), std::string::npos);
  EXPECT_EQ(claims.unreadable_gpus, (std::vector<std::string>{"GPU-x", "GPU-y", "GPU-z"}));
}

}  // namespace
}  // namespace tessera::node
