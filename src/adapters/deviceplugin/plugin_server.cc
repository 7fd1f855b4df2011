#include "adapters/deviceplugin/plugin_server.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "deviceplugin_v1beta1.grpc.pb.h"

namespace tessera::deviceplugin {

namespace pb = ::v1beta1;

namespace {

ino_t InodeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

void ToProto(const node::ContainerResponse& in, pb::ContainerAllocateResponse* out) {
  for (const auto& [k, v] : in.envs) (*out->mutable_envs())[k] = v;
  for (const auto& m : in.mounts) {
    auto* pm = out->add_mounts();
    pm->set_container_path(m.container_path);
    pm->set_host_path(m.host_path);
    pm->set_read_only(m.read_only);
  }
  for (const auto& d : in.devices) {
    auto* pd = out->add_devices();
    pd->set_container_path(d.container_path);
    pd->set_host_path(d.host_path);
    pd->set_permissions(d.permissions);
  }
  for (const auto& [k, v] : in.annotations) (*out->mutable_annotations())[k] = v;
  for (const auto& name : in.cdi_devices) out->add_cdi_devices()->set_name(name);
}

}  // namespace

std::string DefaultSocketName(const std::string& resource_name) {
  const size_t slash = resource_name.find('/');
  return "nvidia-" +
         (slash == std::string::npos ? resource_name : resource_name.substr(slash + 1)) + ".sock";
}

class DevicePluginServer::Service final : public pb::DevicePlugin::Service {
 public:
  explicit Service(DevicePluginServer& owner) : owner_(owner) {}

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const pb::Empty*,
                                      pb::DevicePluginOptions* out) override {
    out->set_pre_start_required(false);
    out->set_get_preferred_allocation_available(owner_.options().preferred_allocation);
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* context, const pb::Empty*,
                            grpc::ServerWriter<pb::ListAndWatchResponse>* writer) override {
    uint64_t sent = 0;
    while (!owner_.stopping() && !context->IsCancelled()) {
      const uint64_t now = owner_.devices_version();
      if (now != sent) {
        pb::ListAndWatchResponse response;
        for (const auto& d : owner_.backend().Devices()) {
          auto* pd = response.add_devices();
          pd->set_id(d.id);
          pd->set_health(d.healthy ? "Healthy" : "Unhealthy");
          if (d.numa >= 0) pd->mutable_topology()->add_nodes()->set_id(d.numa);
        }
        if (!writer->Write(response)) break;
        sent = now;
      }
      owner_.WaitDevices(sent, 500);
    }
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const pb::PreferredAllocationRequest* request,
                                      pb::PreferredAllocationResponse* out) override {
    std::vector<node::PreferredRequest> requests;
    for (const auto& c : request->container_requests()) {
      node::PreferredRequest r;
      r.available.assign(c.available_deviceids().begin(), c.available_deviceids().end());
      r.must_include.assign(c.must_include_deviceids().begin(), c.must_include_deviceids().end());
      r.size = c.allocation_size();
      requests.push_back(std::move(r));
    }
    for (const auto& ids : owner_.backend().Preferred(requests)) {
      auto* c = out->add_container_responses();
      for (const auto& id : ids) c->add_deviceids(id);
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const pb::AllocateRequest* request,
                        pb::AllocateResponse* out) override {
    std::vector<std::vector<std::string>> containers;
    for (const auto& c : request->container_requests()) {
      containers.emplace_back(c.devices_ids().begin(), c.devices_ids().end());
    }
    auto result = owner_.backend().Allocate(containers);
    if (!result.ok()) return {grpc::StatusCode::UNKNOWN, result.error().message};
    for (const auto& c : result.value()) ToProto(c, out->add_container_responses());
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const pb::PreStartContainerRequest*,
                                 pb::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

 private:
  DevicePluginServer& owner_;
};

DevicePluginServer::DevicePluginServer(DevicePluginBackend& backend, PluginOptions options)
    : backend_(backend), options_(std::move(options)) {
  if (options_.socket_name.empty())
    options_.socket_name = DefaultSocketName(options_.resource_name);
}

DevicePluginServer::~DevicePluginServer() { Stop(); }

std::string DevicePluginServer::SocketPath() const {
  return options_.plugin_dir + "/" + options_.socket_name;
}

std::string DevicePluginServer::KubeletPath() const {
  return options_.kubelet_socket.rfind('/', 0) == 0
             ? options_.kubelet_socket
             : options_.plugin_dir + "/" + options_.kubelet_socket;
}

uint64_t DevicePluginServer::devices_version() const {
  std::lock_guard lock(mu_);
  return version_;
}

uint64_t DevicePluginServer::WaitDevices(uint64_t seen, int timeout_ms) {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                    [&] { return version_ != seen || stopping_.load(); });
  return version_;
}

void DevicePluginServer::DevicesChanged() {
  {
    std::lock_guard lock(mu_);
    ++version_;
  }
  changed_.notify_all();
}

Status DevicePluginServer::Serve() {
  ::unlink(SocketPath().c_str());
  service_ = std::make_unique<Service>(*this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + SocketPath(), grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) return Error{"device plugin: cannot listen on " + SocketPath()};
  return Status::Ok();
}

Status DevicePluginServer::Register() {
  auto channel = grpc::CreateChannel("unix://" + KubeletPath(), grpc::InsecureChannelCredentials());
  auto stub = pb::Registration::NewStub(channel);
  pb::RegisterRequest request;
  request.set_version("v1beta1");
  request.set_endpoint(options_.socket_name);
  request.set_resource_name(options_.resource_name);
  request.mutable_options()->set_get_preferred_allocation_available(options_.preferred_allocation);
  request.mutable_options()->set_pre_start_required(false);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  context.set_wait_for_ready(true);
  pb::Empty reply;
  grpc::Status status = stub->Register(&context, request, &reply);
  if (!status.ok()) {
    return Error{"device plugin: registering " + options_.resource_name + " with the kubelet at " +
                 KubeletPath() + " failed: " + status.error_message()};
  }
  kubelet_inode_ = InodeOf(KubeletPath());
  ++registrations_;
  registered_ = true;
  return Status::Ok();
}

Status DevicePluginServer::Start() {
  stopping_ = false;
  registered_ = false;
  if (auto s = Serve(); !s) return s;
  return Register();
}

void DevicePluginServer::Stop() {
  stopping_ = true;
  changed_.notify_all();
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_.reset();
    ::unlink(SocketPath().c_str());
  }
}

Result<bool> DevicePluginServer::CheckKubelet() {
  const ino_t kubelet = InodeOf(KubeletPath());
  const bool ours_gone = InodeOf(SocketPath()) == 0;
  const bool kubelet_new = kubelet != 0 && kubelet != kubelet_inode_;
  // A kubelet that starts removes the plugin sockets it finds, possibly ours just after we made
  // it: a failed registration is retried too.
  if (kubelet == 0 || (registered_ && !ours_gone && !kubelet_new && server_)) return false;
  Stop();
  stopping_ = false;
  registered_ = false;
  if (auto s = Serve(); !s) return Error{s.message()};
  if (auto s = Register(); !s) return Error{s.message()};
  return true;
}

}  // namespace tessera::deviceplugin
