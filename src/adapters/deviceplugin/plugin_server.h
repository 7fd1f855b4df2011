#pragma once

// The kubelet device-plugin server (API v1beta1 over gRPC on a unix socket in the kubelet's
// device-plugins folder) and its registration with the kubelet. The plugin's logic is behind
// DevicePluginBackend (the agent's Allocator and device list); this adapter only converts.

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/node/device_plugin.h"

namespace grpc {
class Server;
}

namespace tessera::deviceplugin {

class DevicePluginBackend {
 public:
  virtual ~DevicePluginBackend() = default;
  virtual std::vector<node::PluginDevice> Devices() = 0;
  virtual Result<std::vector<node::ContainerResponse>> Allocate(
      const std::vector<std::vector<std::string>>& container_requests) = 0;
  virtual std::vector<std::vector<std::string>> Preferred(
      const std::vector<node::PreferredRequest>& requests) = 0;
};

struct PluginOptions {
  std::string plugin_dir = "/var/lib/kubelet/device-plugins";
  std::string kubelet_socket = "kubelet.sock";  // in plugin_dir unless absolute
  std::string resource_name = "nvidia.com/gpu";
  std::string socket_name;  // "" = "nvidia-<name after '/'>.sock", as HAMi names it
  bool preferred_allocation = true;
};

class DevicePluginServer {
 public:
  DevicePluginServer(DevicePluginBackend& backend, PluginOptions options);
  ~DevicePluginServer();
  DevicePluginServer(const DevicePluginServer&) = delete;
  DevicePluginServer& operator=(const DevicePluginServer&) = delete;

  // Serves on the plugin socket (a stale file is removed first) and registers with the kubelet.
  Status Start();
  void Stop();
  // Re-sends the device list on every ListAndWatch stream.
  void DevicesChanged();
  // When the kubelet restarted (its socket is new, or ours was removed) or the last registration
  // failed, serves again and registers. Returns whether it did; an error when registering failed
  // (call again later).
  Result<bool> CheckKubelet();

  int registrations() const { return registrations_.load(); }
  bool registered() const { return registered_.load(); }
  uint64_t devices_version() const;
  // Waits for a change of the device list after `seen`, up to the timeout, or for Stop.
  uint64_t WaitDevices(uint64_t seen, int timeout_ms);
  bool stopping() const { return stopping_.load(); }
  DevicePluginBackend& backend() { return backend_; }
  const PluginOptions& options() const { return options_; }

 private:
  Status Serve();
  Status Register();
  std::string SocketPath() const;
  std::string KubeletPath() const;

  DevicePluginBackend& backend_;
  PluginOptions options_;
  class Service;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  uint64_t version_ = 1;
  std::atomic<bool> stopping_{false};
  std::atomic<int> registrations_{0};
  std::atomic<bool> registered_{false};
  ino_t kubelet_inode_ = 0;
};

// "nvidia.com/gpu" -> "nvidia-gpu.sock".
std::string DefaultSocketName(const std::string& resource_name);

}  // namespace tessera::deviceplugin
