#include "adapters/kube/config.h"

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/yaml/yaml_json.h"
#include "core/codec/json_util.h"
#include "core/common/strings.h"

namespace tessera::kube {
namespace {

using codec::Json;

std::string EnvOrEmpty(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read at startup
  return value == nullptr ? "" : value;
}

bool FileExists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// Reads one kubeconfig document; every error names the file and the field.
class KubeconfigReader {
 public:
  KubeconfigReader(std::string path, Json doc) : path_(std::move(path)), doc_(std::move(doc)) {
    dir_ = std::filesystem::path(path_).parent_path();
  }

  Result<ClusterConfig> Load(const std::string& requested_context) {
    std::string context_name = requested_context;
    if (context_name.empty()) {
      if (Status s = ReadString(doc_, "current-context", "current-context", &context_name); !s) {
        return Error{s.message()};
      }
      if (context_name.empty()) {
        return Fail("current-context", "not set and no context was given");
      }
    }
    auto context = FindNamed("contexts", "context", context_name);
    if (!context.ok()) return context.error();
    const std::string where = context->field;

    ClusterConfig config;
    std::string cluster_name, user_name, ns;
    for (auto [key, out] : {std::pair{"cluster", &cluster_name}, std::pair{"user", &user_name},
                            std::pair{"namespace", &ns}}) {
      if (Status s = ReadString(*context->body, key, where + "." + key, out); !s) {
        return Error{s.message()};
      }
    }
    if (!ns.empty()) config.namespace_name = ns;
    if (cluster_name.empty()) return Fail(where + ".cluster", "not set");
    if (Status s = LoadCluster(cluster_name, where + ".cluster", &config); !s) {
      return Error{s.message()};
    }
    if (!user_name.empty()) {
      if (Status s = LoadUser(user_name, where + ".user", &config); !s) return Error{s.message()};
    }
    return config;
  }

 private:
  struct Named {
    const Json* body;   // the entry's inner object ("cluster", "user" or "context")
    std::string field;  // "clusters[2].cluster"
  };

  Error Fail(const std::string& field, const std::string& message) const {
    return Error{"kubeconfig " + path_ + ": " + field + ": " + message};
  }

  // `list` is "clusters", "users" or "contexts"; entries are {name, <inner>: {...}}.
  Result<Named> FindNamed(const std::string& list, const std::string& inner,
                          const std::string& name) const {
    std::vector<std::string> names;
    auto entries = doc_.find(list);
    if (entries != doc_.end() && !entries->is_null()) {
      if (!entries->is_array()) return Fail(list, "must be a list");
      for (size_t i = 0; i < entries->size(); ++i) {
        const Json& entry = (*entries)[i];
        const std::string field = list + "[" + std::to_string(i) + "]";
        std::string entry_name;
        if (!entry.is_object()) return Fail(field, "must be a mapping");
        if (Status s = ReadString(entry, "name", field + ".name", &entry_name); !s) {
          return Error{s.message()};
        }
        if (entry_name != name) {
          names.push_back(entry_name);
          continue;
        }
        auto body = entry.find(inner);
        if (body == entry.end() || body->is_null()) return Fail(field + "." + inner, "missing");
        if (!body->is_object()) return Fail(field + "." + inner, "must be a mapping");
        return Named{&*body, field + "." + inner};
      }
    }
    const std::string singular = list.substr(0, list.size() - 1);
    return Error{"kubeconfig " + path_ + ": no " + singular + " named \"" + name + "\" (" + list +
                 ": " + (names.empty() ? "none" : Join(names, ", ")) + ")"};
  }

  Status ReadString(const Json& obj, const std::string& key, const std::string& field,
                    std::string* out) const {
    auto it = obj.find(key);  // end() for non-objects too
    if (it == obj.end() || it->is_null()) return Status::Ok();
    if (!it->is_string()) return Fail(field, "must be a string");
    *out = it->get<std::string>();
    return Status::Ok();
  }

  Status ReadBool(const Json& obj, const std::string& key, const std::string& field,
                  bool* out) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return Status::Ok();
    if (it->is_boolean()) {
      *out = it->get<bool>();
      return Status::Ok();
    }
    if (it->is_string() && ParseGoBool(it->get<std::string>(), out)) return Status::Ok();
    return Fail(field, "must be true or false");
  }

  std::string Resolve(const std::string& file) const {
    std::filesystem::path p(file);
    if (p.is_absolute() || dir_.empty()) return file;
    return (dir_ / p).string();
  }

  // `<key>-data` (base64) wins over `<key>` (a path); the result is the text.
  Status ReadDataOrFile(const Json& obj, const std::string& key, const std::string& where,
                        std::string* out) const {
    std::string data, file;
    if (Status s = ReadString(obj, key + "-data", where + "." + key + "-data", &data); !s) {
      return s;
    }
    if (Status s = ReadString(obj, key, where + "." + key, &file); !s) return s;
    if (!data.empty()) {
      std::string decoded;
      if (!Base64Decode(data, &decoded)) return Fail(where + "." + key + "-data", "not base64");
      *out = std::move(decoded);
    } else if (!file.empty()) {
      auto text = adapters::ReadFile(Resolve(file));
      if (!text.ok()) return Fail(where + "." + key, text.error().message);
      *out = std::move(*text);
    }
    return Status::Ok();
  }

  Status LoadCluster(const std::string& name, const std::string& ref, ClusterConfig* config) {
    auto cluster = FindNamed("clusters", "cluster", name);
    if (!cluster.ok()) return Error{cluster.error().message + ", named by " + ref};
    const Json& c = *cluster->body;
    const std::string& where = cluster->field;
    if (Status s = ReadString(c, "server", where + ".server", &config->server); !s) return s;
    if (config->server.empty()) return Fail(where + ".server", "missing");
    if (!StartsWith(config->server, "https://") && !StartsWith(config->server, "http://")) {
      return Fail(where + ".server", "\"" + config->server + "\" is not an http(s) URL");
    }
    if (Status s = ReadDataOrFile(c, "certificate-authority", where, &config->ca_pem); !s) {
      return s;
    }
    if (Status s = ReadBool(c, "insecure-skip-tls-verify", where + ".insecure-skip-tls-verify",
                            &config->insecure_skip_tls_verify);
        !s) {
      return s;
    }
    return ReadString(c, "tls-server-name", where + ".tls-server-name", &config->tls_server_name);
  }

  Status LoadUser(const std::string& name, const std::string& ref, ClusterConfig* config) {
    auto user = FindNamed("users", "user", name);
    if (!user.ok()) return Error{user.error().message + ", named by " + ref};
    const Json& u = *user->body;
    const std::string& where = user->field;
    for (const char* unsupported : {"exec", "auth-provider"}) {
      auto it = u.find(unsupported);
      if (it != u.end() && !it->is_null()) {
        return Fail(where + "." + unsupported,
                    "not supported (use token, tokenFile or client certificates)");
      }
    }
    if (Status s = ReadDataOrFile(u, "client-certificate", where, &config->client_cert_pem); !s) {
      return s;
    }
    if (Status s = ReadDataOrFile(u, "client-key", where, &config->client_key_pem); !s) return s;
    if (config->client_cert_pem.empty() != config->client_key_pem.empty()) {
      return Fail(where, "client-certificate and client-key must be given together");
    }
    if (Status s = ReadString(u, "token", where + ".token", &config->bearer_token); !s) return s;
    std::string token_file;
    if (Status s = ReadString(u, "tokenFile", where + ".tokenFile", &token_file); !s) return s;
    if (!token_file.empty()) {
      // As in client-go, a token file takes precedence over an inline token.
      config->token_file = Resolve(token_file);
      auto token = adapters::ReadFile(config->token_file);
      if (!token.ok()) return Fail(where + ".tokenFile", token.error().message);
      config->bearer_token = Trim(*token);
    }
    return Status::Ok();
  }

  std::string path_;
  std::filesystem::path dir_;
  Json doc_;
};

}  // namespace

Result<ClusterConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = adapters::ReadFile(path);
  if (!text.ok()) return Error{"kubeconfig " + text.error().message};
  auto doc = adapters::ParseYaml(*text, "kubeconfig " + path);
  if (!doc.ok()) return doc.error();
  if (!doc->is_object()) return Error{"kubeconfig " + path + ": not a mapping"};
  return KubeconfigReader(path, std::move(*doc)).Load(context);
}

Result<ClusterConfig> LoadInClusterConfig(const std::string& service_account_dir) {
  std::string host = EnvOrEmpty("KUBERNETES_SERVICE_HOST");
  const std::string port = EnvOrEmpty("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return Error{
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set"};
  }
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";

  ClusterConfig config;
  config.server = "https://" + host + ":" + port;
  config.token_file = service_account_dir + "/token";
  auto token = adapters::ReadFile(config.token_file);
  if (!token.ok()) return Error{"in-cluster config: token: " + token.error().message};
  config.bearer_token = Trim(*token);
  auto ca = adapters::ReadFile(service_account_dir + "/ca.crt");
  if (!ca.ok()) return Error{"in-cluster config: ca.crt: " + ca.error().message};
  config.ca_pem = std::move(*ca);
  // The namespace file is optional, as in client-go.
  if (auto ns = adapters::ReadFile(service_account_dir + "/namespace"); ns.ok()) {
    if (std::string trimmed = Trim(*ns); !trimmed.empty()) config.namespace_name = trimmed;
  }
  return config;
}

Result<ClusterConfig> DiscoverConfig(const std::string& kubeconfig_flag) {
  if (!kubeconfig_flag.empty()) return LoadKubeconfig(kubeconfig_flag);
  std::vector<std::string> tried{"--kubeconfig: not given"};

  const std::vector<std::string> env_files = SplitTrimmed(EnvOrEmpty("KUBECONFIG"), ':');
  // client-go merges the whole list; its first file is enough here.
  if (!env_files.empty()) return LoadKubeconfig(env_files.front());
  tried.emplace_back("$KUBECONFIG: not set");

  if (!EnvOrEmpty("KUBERNETES_SERVICE_HOST").empty()) return LoadInClusterConfig();
  tried.emplace_back("in-cluster: KUBERNETES_SERVICE_HOST not set");

  const std::string home = EnvOrEmpty("HOME");
  if (!home.empty()) {
    const std::string default_path = home + "/.kube/config";
    if (FileExists(default_path)) return LoadKubeconfig(default_path);
    tried.push_back(default_path + ": not found");
  } else {
    tried.emplace_back("~/.kube/config: $HOME not set");
  }
  return Error{"no Kubernetes configuration found (" + Join(tried, "; ") + ")"};
}

}  // namespace tessera::kube
