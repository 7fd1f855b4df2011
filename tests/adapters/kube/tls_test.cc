// The client against a TLS API server: CA verification, server-name override, client
// certificates. Certificates are made with the openssl command for each run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "adapters/kube/client.h"
#include "adapters/yaml/yaml_json.h"
#include "fake_api_server.h"
#include "test_support.h"

namespace tessera::kube {
namespace {

using testing::FakeApiServer;
using testing::FastRetryOptions;
using testing::RecordedRequest;
using testing::ReplyJson;
using testing::TempDir;

constexpr const char* kServerName = "api.tessera.test";

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::string sign = "-CA ca.crt -CAkey ca.key -CAcreateserial -days 2";
    dir_->Write("server.ext", std::string("subjectAltName=DNS:") + kServerName +
                                  "\nextendedKeyUsage=serverAuth\n");
    dir_->Write("client.ext", "extendedKeyUsage=clientAuth\n");
    const std::string script =
        "cd '" + dir_->path() + "' && " + "openssl req -x509 " + key +
        " -keyout ca.key -out ca.crt -days 2 -subj /CN=test-ca && " + "openssl req -x509 " + key +
        " -keyout other.key -out other-ca.crt -days 2 " + "-subj /CN=other-ca && " +
        "openssl req " + key + " -keyout server.key -out server.csr -subj /CN=" + kServerName +
        " && openssl x509 -req -in server.csr " + sign +
        " -extfile server.ext -out server.crt && " + "openssl req " + key +
        " -keyout client.key -out client.csr -subj /CN=tessera && " +
        "openssl x509 -req -in client.csr " + sign + " -extfile client.ext -out client.crt";
    const std::string command = "(" + script + ") >/dev/null 2>&1";
    have_certs_ = std::system(command.c_str()) == 0;  // NOLINT(cert-env33-c): test setup
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    if (!have_certs_) GTEST_SKIP() << "the openssl command could not make test certificates";
    server_ = std::make_unique<FakeApiServer>(FakeApiServer::TlsFiles{
        dir_->path() + "/server.crt", dir_->path() + "/server.key", dir_->path() + "/ca.crt"});
    ASSERT_TRUE(server_->running());
    server_->On("GET", "/version", [](const RecordedRequest&, httplib::Response& res) {
      ReplyJson(res, 200, {{"gitVersion", "v1.34.0"}});
    });
  }

  static std::string Read(const std::string& name) {
    return adapters::ReadFile(dir_->path() + "/" + name).value();
  }

  // Trusts our CA, verifies the server as kServerName, authenticates with a client certificate.
  ClusterConfig GoodConfig() const {
    ClusterConfig config;
    config.server = server_->url();
    config.ca_pem = Read("ca.crt");
    config.tls_server_name = kServerName;
    config.client_cert_pem = Read("client.crt");
    config.client_key_pem = Read("client.key");
    return config;
  }

  static ClientOptions FewRetries() {
    ClientOptions options = FastRetryOptions();
    options.max_retries = 1;
    return options;
  }

  static TempDir* dir_;
  static bool have_certs_;
  std::unique_ptr<FakeApiServer> server_;
};

TempDir* TlsTest::dir_ = nullptr;
bool TlsTest::have_certs_ = false;

TEST_F(TlsTest, VerifiesTheServerAgainstTheConfiguredCaAndServerName) {
  Client client(GoodConfig(), FewRetries());
  Response r = client.Get("/version");
  EXPECT_EQ(r.status, 200) << r.Describe();
  EXPECT_EQ(Json::parse(r.body)["gitVersion"], "v1.34.0");
}

TEST_F(TlsTest, UnknownCaIsRejectedWithoutRetrying) {
  ClusterConfig config = GoodConfig();
  config.ca_pem = Read("other-ca.crt");
  Client client(config, FastRetryOptions());
  Response r = client.Get("/version");
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.transport_error.empty());
  EXPECT_TRUE(server_->Requests().empty());
}

TEST_F(TlsTest, CertificateForAnotherNameIsRejected) {
  ClusterConfig config = GoodConfig();
  config.tls_server_name.clear();  // the certificate names api.tessera.test, not 127.0.0.1
  Client client(config, FewRetries());
  Response r = client.Get("/version");
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.transport_error.empty());
}

TEST_F(TlsTest, InsecureSkipVerifyAcceptsAnyServerCertificate) {
  ClusterConfig config = GoodConfig();
  config.ca_pem.clear();
  config.tls_server_name.clear();
  config.insecure_skip_tls_verify = true;
  Client client(config, FewRetries());
  EXPECT_EQ(client.Get("/version").status, 200);
}

TEST_F(TlsTest, ServerRequiringAClientCertificateRefusesAClientWithout) {
  ClusterConfig config = GoodConfig();
  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  Client client(config, FewRetries());
  Response r = client.Get("/version");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(server_->Requests().empty());
}

}  // namespace
}  // namespace tessera::kube
