#include "adapters/kube/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_support.h"

namespace tessera::kube {
namespace {

using ::testing::HasSubstr;
using testing::ScopedEnv;
using testing::TempDir;

// "-----BEGIN CERTIFICATE-----\nCA\n" and friends, base64-encoded as kubeconfig stores them.
constexpr const char* kCaPem = "CA PEM\n";
constexpr const char* kCaPemBase64 = "Q0EgUEVNCg==";
constexpr const char* kCertPem = "CERT PEM\n";
constexpr const char* kCertPemBase64 = "Q0VSVCBQRU0K";
constexpr const char* kKeyPem = "KEY PEM\n";
constexpr const char* kKeyPemBase64 = "S0VZIFBFTQo=";

std::string KubeconfigWithUser(const std::string& user_fields) {
  return R"(apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: other
  context: {cluster: prod, user: admin}
- name: dev
  context:
    cluster: dev-cluster
    user: dev-user
    namespace: team-a
clusters:
- name: prod
  cluster: {server: "https://prod:6443"}
- name: dev-cluster
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: )" +
         std::string(kCaPemBase64) + R"(
    tls-server-name: kubernetes.default
users:
- name: admin
  user: {token: admin-token}
- name: dev-user
  user:
)" + user_fields;
}

TEST(LoadKubeconfigTest, ReadsCurrentContextWithInlineData) {
  TempDir dir;
  const std::string path = dir.Write(
      "config", KubeconfigWithUser(std::string("    client-certificate-data: ") + kCertPemBase64 +
                                   "\n    client-key-data: " + kKeyPemBase64 + "\n"));
  auto config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->tls_server_name, "kubernetes.default");
  EXPECT_FALSE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->client_cert_pem, kCertPem);
  EXPECT_EQ(config->client_key_pem, kKeyPem);
  EXPECT_EQ(config->namespace_name, "team-a");
  EXPECT_TRUE(config->bearer_token.empty());
}

TEST(LoadKubeconfigTest, ReadsFilesRelativeToTheKubeconfigDirectory) {
  TempDir dir;
  dir.Write("certs/ca.crt", "CA FROM FILE");
  dir.Write("certs/client.crt", "CERT FROM FILE");
  const std::string key_path = dir.Write("abs/client.key", "KEY FROM FILE");
  const std::string path = dir.Write("kube/config", R"(current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters:
- name: k
  cluster: {server: "https://k:6443", certificate-authority: ../certs/ca.crt,
            insecure-skip-tls-verify: true}
users:
- name: u
  user: {client-certificate: ../certs/client.crt, client-key: )" +
                                                        key_path + "}\n");
  auto config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->ca_pem, "CA FROM FILE");
  EXPECT_EQ(config->client_cert_pem, "CERT FROM FILE");
  EXPECT_EQ(config->client_key_pem, "KEY FROM FILE");
  EXPECT_TRUE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->namespace_name, "default");
}

TEST(LoadKubeconfigTest, ExplicitContextAndInlineToken) {
  TempDir dir;
  const std::string path = dir.Write("config", KubeconfigWithUser("    token: unused\n"));
  auto config = LoadKubeconfig(path, "other");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server, "https://prod:6443");
  EXPECT_EQ(config->bearer_token, "admin-token");
  EXPECT_TRUE(config->token_file.empty());
}

TEST(LoadKubeconfigTest, TokenFileIsReadAndRemembered) {
  TempDir dir;
  const std::string token_path = dir.Write("token", "file-token\n");
  const std::string path = dir.Write("config", KubeconfigWithUser("    tokenFile: token\n"));
  auto config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->bearer_token, "file-token");
  EXPECT_EQ(config->token_file, token_path);
}

TEST(LoadKubeconfigTest, MissingContextListsTheKnownOnes) {
  TempDir dir;
  const std::string path = dir.Write("config", KubeconfigWithUser("    token: t\n"));
  auto config = LoadKubeconfig(path, "staging");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message, HasSubstr("kubeconfig " + path));
  EXPECT_THAT(config.error().message, HasSubstr("no context named \"staging\""));
  EXPECT_THAT(config.error().message, HasSubstr("other, dev"));
}

TEST(LoadKubeconfigTest, MissingCurrentContextIsAnError) {
  TempDir dir;
  const std::string path = dir.Write("config", "clusters: []\n");
  auto config = LoadKubeconfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message, HasSubstr("current-context: not set"));
}

TEST(LoadKubeconfigTest, BadBase64NamesTheField) {
  TempDir dir;
  const std::string path = dir.Write(
      "config", KubeconfigWithUser(std::string("    client-certificate-data: ") + kCertPemBase64 +
                                   "\n    client-key-data: '%%%not-base64'\n"));
  auto config = LoadKubeconfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "kubeconfig " + path + ": users[1].user.client-key-data: not base64");
}

TEST(LoadKubeconfigTest, UnreadableFileNamesTheField) {
  TempDir dir;
  const std::string path = dir.Write("config", KubeconfigWithUser("    tokenFile: nope\n"));
  auto config = LoadKubeconfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message, HasSubstr("users[1].user.tokenFile: "));
  EXPECT_THAT(config.error().message, HasSubstr("nope"));
}

TEST(LoadKubeconfigTest, ExecPluginsAreRefusedClearly) {
  TempDir dir;
  const std::string path =
      dir.Write("config", KubeconfigWithUser("    exec: {command: aws, apiVersion: v1}\n"));
  auto config = LoadKubeconfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message, HasSubstr("users[1].user.exec: not supported"));
}

TEST(LoadKubeconfigTest, MissingFileNamesIt) {
  auto config = LoadKubeconfig("/nonexistent/kubeconfig");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message, HasSubstr("kubeconfig /nonexistent/kubeconfig"));
}

TEST(LoadInClusterConfigTest, ReadsServiceAccountAndEnvironment) {
  TempDir dir;
  dir.Write("sa/token", "sa-token\n");
  dir.Write("sa/ca.crt", "CLUSTER CA");
  dir.Write("sa/namespace", "kube-system\n");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  auto config = LoadInClusterConfig(dir.path() + "/sa");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->bearer_token, "sa-token");
  EXPECT_EQ(config->token_file, dir.path() + "/sa/token");
  EXPECT_EQ(config->ca_pem, "CLUSTER CA");
  EXPECT_EQ(config->namespace_name, "kube-system");
}

TEST(LoadInClusterConfigTest, BracketsIpv6Hosts) {
  TempDir dir;
  dir.Write("token", "t");
  dir.Write("ca.crt", "CA");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "fd00::1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "6443");
  auto config = LoadInClusterConfig(dir.path());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server, "https://[fd00::1]:6443");
  EXPECT_EQ(config->namespace_name, "default");
}

TEST(LoadInClusterConfigTest, OutsideAClusterIsAnError) {
  ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
  auto config = LoadInClusterConfig("/nonexistent");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message, HasSubstr("KUBERNETES_SERVICE_HOST"));
}

class DiscoverConfigTest : public ::testing::Test {
 protected:
  std::string Kubeconfig(const std::string& name, const std::string& server) const {
    return dir_.Write(name,
                      "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
                      "clusters: [{name: k, cluster: {server: \"" +
                          server + "\"}}]\n");
  }
  TempDir dir_;
  ScopedEnv home_{"HOME", dir_.path() + "/home"};
  ScopedEnv kubeconfig_{"KUBECONFIG", std::nullopt};
  ScopedEnv host_{"KUBERNETES_SERVICE_HOST", std::nullopt};
};

TEST_F(DiscoverConfigTest, FlagWinsOverEnvironment) {
  const std::string flag = Kubeconfig("flag", "https://flag:6443");
  ScopedEnv env("KUBECONFIG", Kubeconfig("env", "https://env:6443"));
  auto config = DiscoverConfig(flag);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server, "https://flag:6443");
}

TEST_F(DiscoverConfigTest, FirstEntryOfKubeconfigVariable) {
  ScopedEnv env("KUBECONFIG", Kubeconfig("env1", "https://env1:6443") + ":" +
                                  Kubeconfig("env2", "https://env2:6443"));
  auto config = DiscoverConfig("");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server, "https://env1:6443");
}

TEST_F(DiscoverConfigTest, HomeKubeconfigLast) {
  Kubeconfig("home/.kube/config", "https://home:6443");
  auto config = DiscoverConfig("");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server, "https://home:6443");
}

TEST_F(DiscoverConfigTest, NothingFoundListsWhatWasTried) {
  auto config = DiscoverConfig("");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message, HasSubstr("--kubeconfig"));
  EXPECT_THAT(config.error().message, HasSubstr("$KUBECONFIG"));
  EXPECT_THAT(config.error().message, HasSubstr("in-cluster"));
  EXPECT_THAT(config.error().message, HasSubstr(dir_.path() + "/home/.kube/config"));
}

TEST_F(DiscoverConfigTest, ExplicitFileThatFailsDoesNotFallBack) {
  Kubeconfig("home/.kube/config", "https://home:6443");
  auto config = DiscoverConfig(dir_.path() + "/missing");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message, HasSubstr("missing"));
}

}  // namespace
}  // namespace tessera::kube
