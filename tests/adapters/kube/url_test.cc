#include "adapters/kube/url.h"

#include <gtest/gtest.h>

namespace tessera::kube {
namespace {

TEST(ParseServerUrlTest, HostPortAndPrefix) {
  auto url = ParseServerUrl("https://[fd00::1]:6443/k8s/clusters/c-1/");
  ASSERT_TRUE(url.ok()) << url.error().message;
  EXPECT_EQ(url->host, "[fd00::1]");
  EXPECT_EQ(url->port, "6443");
  EXPECT_EQ(url->path_prefix, "/k8s/clusters/c-1");
  auto plain = ParseServerUrl("https://api.example.com");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->port, "443");
  EXPECT_FALSE(ParseServerUrl("ftp://x").ok());
  EXPECT_FALSE(ParseServerUrl("https://:6443").ok());
}

TEST(EscapeUrlComponentTest, KeepsUnreservedOnly) {
  EXPECT_EQ(EscapeUrlComponent("spec.nodeName=n1,status.phase!=Failed"),
            "spec.nodeName%3Dn1%2Cstatus.phase%21%3DFailed");
  EXPECT_EQ(EscapeUrlComponent("a-b_c~d"), "a-b_c~d");
}

}  // namespace
}  // namespace tessera::kube
