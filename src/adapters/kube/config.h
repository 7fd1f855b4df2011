#pragma once

#include <string>

#include "core/common/result.h"

namespace tessera::kube {

// Where the API server is and how to authenticate to it: what kubeconfig or in-cluster
// configuration boils down to. Certificates and keys are PEM text, never paths.
struct ClusterConfig {
  std::string server;  // "https://127.0.0.1:6443"
  std::string ca_pem;  // empty: the system's CAs
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // name to verify the server's certificate against (and SNI)
  std::string client_cert_pem, client_key_pem;
  std::string bearer_token;
  // When set, the token is re-read from this file at most every minute and after a 401
  // (bound service-account tokens expire); bearer_token holds its contents at load time.
  std::string token_file;
  std::string namespace_name = "default";
};

// Reads a kubeconfig file: `context`, or current-context when empty. Relative paths in it are
// relative to the file's directory. Errors name the file and the field.
Result<ClusterConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// The pod's service account: $KUBERNETES_SERVICE_HOST/PORT, and token, ca.crt and namespace
// from `service_account_dir`.
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
Result<ClusterConfig> LoadInClusterConfig(
    const std::string& service_account_dir = kServiceAccountDir);

// client-go's order: the --kubeconfig flag, then the first entry of $KUBECONFIG, then in-cluster,
// then ~/.kube/config. An explicitly named file that fails to load is an error (no fallback);
// when nothing is found the error lists what was tried.
Result<ClusterConfig> DiscoverConfig(const std::string& kubeconfig_flag);

}  // namespace tessera::kube
