#include "sim/replay/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::sim::replay {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseTraceNodes, ReadsColumnsByHeaderName) {
  auto nodes = ParseTraceNodes(
      "model,gpu,sn,memory_mib,cpu_milli\r\n"
      "P100,2,openb-node-0000,262144,64000\r\n"
      "\n"
      ",0,cpu-node,1024,8000\r\n",
      "nodes.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name, "openb-node-0000");
  EXPECT_EQ((*nodes)[0].cpu_milli, 64000);
  EXPECT_EQ((*nodes)[0].memory_mib, 262144);
  EXPECT_EQ((*nodes)[0].gpus, 2);
  EXPECT_EQ((*nodes)[0].model, "P100");
  EXPECT_EQ((*nodes)[1].gpus, 0);
  EXPECT_EQ((*nodes)[1].model, "");
}

TEST(ParseTracePods, ReadsTheFullLayout) {
  auto pods = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
      "p1,6000,12288,1,460,V100M16|V100M32,LS,Running,427061,12902960,427061\n"
      "p2,4000,8192,0,0,,BE,Running,1,2,3\n"
      "p3,88000,327680,8,1000,G2,LS,Running,1,2,3\n",
      "pods.csv");
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 4u);
  EXPECT_EQ((*pods)[0].name, "p0");
  EXPECT_EQ((*pods)[0].TotalGpuMilli(), 1000);
  EXPECT_TRUE((*pods)[0].gpu_spec.empty());
  EXPECT_EQ((*pods)[1].gpu_milli, 460);
  EXPECT_THAT((*pods)[1].gpu_spec, ElementsAre("V100M16", "V100M32"));
  EXPECT_EQ(KindOf((*pods)[0]), PodKind::kOneGpu);
  EXPECT_EQ(KindOf((*pods)[1]), PodKind::kSharing);
  EXPECT_EQ(KindOf((*pods)[2]), PodKind::kCpuOnly);
  EXPECT_EQ(KindOf((*pods)[3]), PodKind::kMultiGpu);
  EXPECT_EQ((*pods)[3].TotalGpuMilli(), 8000);
}

TEST(ParseTracePods, ReadsTheMultiGpuLayout) {
  auto pods = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
      "openb-pod-0000,12000,16384,1,1000\n"
      "openb-pod-0001,6000,12288,1,460\n",
      "multigpu.csv");
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[1].gpu_milli, 460);
  EXPECT_TRUE((*pods)[1].gpu_spec.empty());
}

TEST(ParseTracePods, DropsGpuFieldsOfCpuOnlyPodsAndAcceptsQuotesAndWholeFloats) {
  auto pods = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
      "\"pod,quoted\",2000.0,100,0,500,T4\n"
      "p1,1000,100,1,250,\"A10||T4\"\n",
      "pods.csv");
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  EXPECT_EQ((*pods)[0].name, "pod,quoted");
  EXPECT_EQ((*pods)[0].cpu_milli, 2000);
  EXPECT_EQ((*pods)[0].gpu_milli, 0);
  EXPECT_TRUE((*pods)[0].gpu_spec.empty());
  EXPECT_THAT((*pods)[1].gpu_spec, ElementsAre("A10", "T4"));
}

TEST(ParseTracePods, ErrorsNameFileLineAndColumn) {
  auto bad_number = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
      "p0,1000,100,1,500\n"
      "p1,12x,100,1,500\n",
      "pods.csv");
  ASSERT_FALSE(bad_number.ok());
  EXPECT_THAT(bad_number.error().message, HasSubstr("pods.csv:3: column 'cpu_milli'"));
  EXPECT_THAT(bad_number.error().message, HasSubstr("'12x'"));

  auto out_of_range = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,100,1,1500\n", "pods.csv");
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_THAT(out_of_range.error().message, HasSubstr("pods.csv:2: column 'gpu_milli'"));

  auto negative =
      ParseTracePods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,-5,100,0,0\n", "pods.csv");
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(negative.error().message, HasSubstr("column 'cpu_milli'"));

  auto shared_multi = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,100,2,500\n", "pods.csv");
  ASSERT_FALSE(shared_multi.ok());
  EXPECT_THAT(shared_multi.error().message, HasSubstr("whole GPUs"));

  auto missing_column = ParseTracePods("name,cpu_milli,memory_mib,num_gpu\np0,1,1,0\n", "x.csv");
  ASSERT_FALSE(missing_column.ok());
  EXPECT_THAT(missing_column.error().message, HasSubstr("x.csv: header has no column 'gpu_milli'"));

  auto short_row =
      ParseTracePods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,100\n", "pods.csv");
  ASSERT_FALSE(short_row.ok());
  EXPECT_THAT(short_row.error().message, HasSubstr("pods.csv:2: expected 5 fields"));

  auto unterminated = ParseTracePods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n\"p0,1000,100,0,0\n", "pods.csv");
  ASSERT_FALSE(unterminated.ok());
  EXPECT_THAT(unterminated.error().message, HasSubstr("pods.csv:2: unterminated"));

  EXPECT_FALSE(ParseTracePods("", "empty.csv").ok());
}

TEST(ParseTraceNodes, Errors) {
  auto no_model = ParseTraceNodes("sn,cpu_milli,memory_mib,gpu,model\nn0,1000,10,2,\n", "n.csv");
  ASSERT_FALSE(no_model.ok());
  EXPECT_THAT(no_model.error().message, HasSubstr("n.csv:2: column 'model'"));

  auto bad_gpu = ParseTraceNodes("sn,cpu_milli,memory_mib,gpu,model\nn0,1000,10,two,T4\n", "n.csv");
  ASSERT_FALSE(bad_gpu.ok());
  EXPECT_THAT(bad_gpu.error().message, HasSubstr("n.csv:2: column 'gpu'"));

  auto missing = ParseTraceNodes("sn,cpu_milli,gpu,model\n", "n.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, HasSubstr("memory_mib"));
}

TEST(LoadTrace, UnreadableFileIsAnError) {
  auto nodes = LoadTraceNodes("/nonexistent/nodes.csv");
  ASSERT_FALSE(nodes.ok());
  EXPECT_THAT(nodes.error().message, HasSubstr("/nonexistent/nodes.csv: cannot open"));
  EXPECT_FALSE(LoadTracePods("/nonexistent/pods.csv").ok());
}

TEST(PodKind, Names) {
  EXPECT_EQ(PodKindName(PodKind::kCpuOnly), "cpu_only");
  EXPECT_EQ(PodKindName(PodKind::kSharing), "sharing");
  EXPECT_EQ(PodKindName(PodKind::kOneGpu), "one_gpu");
  EXPECT_EQ(PodKindName(PodKind::kMultiGpu), "multi_gpu");
}

}  // namespace
}  // namespace tessera::sim::replay
