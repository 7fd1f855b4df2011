// The device-plugin server against a kubelet stand-in speaking the same gRPC API: registration,
// options, ListAndWatch updates, Allocate and GetPreferredAllocation conversion, and
// re-registration after a kubelet restart (the kubelet recreates its socket and removes ours).

#include "adapters/deviceplugin/plugin_server.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "deviceplugin_v1beta1.grpc.pb.h"

namespace tessera::deviceplugin {
namespace {

namespace pb = ::v1beta1;

class FakeKubelet final : public pb::Registration::Service {
 public:
  explicit FakeKubelet(const std::string& socket) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeKubelet() override { server_->Shutdown(); }
  grpc::Status Register(grpc::ServerContext*, const pb::RegisterRequest* request,
                        pb::Empty*) override {
    std::lock_guard lock(mu_);
    requests_.push_back(*request);
    return grpc::Status::OK;
  }
  std::vector<pb::RegisterRequest> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  std::mutex mu_;
  std::vector<pb::RegisterRequest> requests_;
  std::unique_ptr<grpc::Server> server_;
};

class Backend : public DevicePluginBackend {
 public:
  std::vector<node::PluginDevice> Devices() override {
    std::lock_guard lock(mu);
    return devices;
  }
  Result<std::vector<node::ContainerResponse>> Allocate(
      const std::vector<std::vector<std::string>>& requests) override {
    if (requests.size() == 1 && requests[0].size() == 1 && requests[0][0] == "bad") {
      return Error{"pod default/x: device number not matched"};
    }
    std::vector<node::ContainerResponse> out;
    for (const auto& r : requests) {
      node::ContainerResponse c;
      c.envs["NVIDIA_VISIBLE_DEVICES"] = r.empty() ? "" : r[0];
      c.mounts.push_back({"/etc/ld.so.preload", "/usr/local/vgpu/ld.so.preload", true});
      c.cdi_devices.push_back("k8s.device-plugin.nvidia.com/gpu=" + (r.empty() ? "" : r[0]));
      out.push_back(c);
    }
    return out;
  }
  std::vector<std::vector<std::string>> Preferred(
      const std::vector<node::PreferredRequest>& requests) override {
    std::vector<std::vector<std::string>> out;
    for (const auto& r : requests) out.push_back({r.available.back()});
    return out;
  }
  std::mutex mu;
  std::vector<node::PluginDevice> devices = {{"GPU-a-0", true, 0}, {"GPU-a-1", true, 0}};
};

class PluginServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tessera-dp-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    options_.plugin_dir = dir_.string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::unique_ptr<pb::DevicePlugin::Stub> Plugin() {
    return pb::DevicePlugin::NewStub(grpc::CreateChannel("unix://" + Path("nvidia-gpu.sock"),
                                                         grpc::InsecureChannelCredentials()));
  }
  std::filesystem::path dir_;
  PluginOptions options_;
  Backend backend_;
};

TEST_F(PluginServerTest, RegistersAndServesTheKubeletApi) {
  FakeKubelet kubelet(Path("kubelet.sock"));
  DevicePluginServer server(backend_, options_);
  ASSERT_TRUE(server.Start().ok());
  auto requests = kubelet.requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].version(), "v1beta1");
  EXPECT_EQ(requests[0].endpoint(), "nvidia-gpu.sock");
  EXPECT_EQ(requests[0].resource_name(), "nvidia.com/gpu");
  EXPECT_TRUE(requests[0].options().get_preferred_allocation_available());

  auto plugin = Plugin();
  {
    grpc::ClientContext ctx;
    pb::Empty empty;
    pb::DevicePluginOptions opts;
    ASSERT_TRUE(plugin->GetDevicePluginOptions(&ctx, empty, &opts).ok());
    EXPECT_TRUE(opts.get_preferred_allocation_available());
    EXPECT_FALSE(opts.pre_start_required());
  }
  {
    grpc::ClientContext ctx;
    pb::Empty empty;
    auto stream = plugin->ListAndWatch(&ctx, empty);
    pb::ListAndWatchResponse list;
    ASSERT_TRUE(stream->Read(&list));
    ASSERT_EQ(list.devices_size(), 2);
    EXPECT_EQ(list.devices(0).id(), "GPU-a-0");
    EXPECT_EQ(list.devices(0).health(), "Healthy");
    EXPECT_EQ(list.devices(0).topology().nodes(0).id(), 0);
    {
      std::lock_guard lock(backend_.mu);
      backend_.devices[1].healthy = false;
    }
    server.DevicesChanged();
    ASSERT_TRUE(stream->Read(&list));
    EXPECT_EQ(list.devices(1).health(), "Unhealthy");
    ctx.TryCancel();
  }
  {
    grpc::ClientContext ctx;
    pb::AllocateRequest request;
    request.add_container_requests()->add_devices_ids("GPU-a-1");
    pb::AllocateResponse response;
    ASSERT_TRUE(plugin->Allocate(&ctx, request, &response).ok());
    ASSERT_EQ(response.container_responses_size(), 1);
    const auto& c = response.container_responses(0);
    EXPECT_EQ(c.envs().at("NVIDIA_VISIBLE_DEVICES"), "GPU-a-1");
    EXPECT_EQ(c.mounts(0).container_path(), "/etc/ld.so.preload");
    EXPECT_TRUE(c.mounts(0).read_only());
    EXPECT_EQ(c.cdi_devices(0).name(), "k8s.device-plugin.nvidia.com/gpu=GPU-a-1");
  }
  {
    grpc::ClientContext ctx;
    pb::AllocateRequest request;
    request.add_container_requests()->add_devices_ids("bad");
    pb::AllocateResponse response;
    grpc::Status status = plugin->Allocate(&ctx, request, &response);
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(status.error_message(), "pod default/x: device number not matched");
  }
  {
    grpc::ClientContext ctx;
    pb::PreferredAllocationRequest request;
    auto* c = request.add_container_requests();
    c->add_available_deviceids("GPU-a-0");
    c->add_available_deviceids("GPU-a-1");
    c->set_allocation_size(1);
    pb::PreferredAllocationResponse response;
    ASSERT_TRUE(plugin->GetPreferredAllocation(&ctx, request, &response).ok());
    EXPECT_EQ(response.container_responses(0).deviceids(0), "GPU-a-1");
  }
  server.Stop();
  EXPECT_FALSE(std::filesystem::exists(Path("nvidia-gpu.sock")));
}

TEST_F(PluginServerTest, ReRegistersWhenTheKubeletRestarts) {
  auto kubelet = std::make_unique<FakeKubelet>(Path("kubelet.sock"));
  DevicePluginServer server(backend_, options_);
  ASSERT_TRUE(server.Start().ok());
  EXPECT_FALSE(server.CheckKubelet().value());  // nothing changed
  // The kubelet restarts: it removes the plugin sockets and makes a new kubelet.sock.
  kubelet.reset();
  std::filesystem::remove(Path("kubelet.sock"));
  std::filesystem::remove(Path("nvidia-gpu.sock"));
  kubelet = std::make_unique<FakeKubelet>(Path("kubelet.sock"));
  auto again = server.CheckKubelet();
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_TRUE(again.value());
  EXPECT_EQ(server.registrations(), 2);
  EXPECT_EQ(kubelet->requests().size(), 1U);
  EXPECT_TRUE(std::filesystem::exists(Path("nvidia-gpu.sock")));
  auto plugin = Plugin();
  grpc::ClientContext ctx;
  pb::Empty empty;
  pb::DevicePluginOptions opts;
  EXPECT_TRUE(plugin->GetDevicePluginOptions(&ctx, empty, &opts).ok());
}

TEST_F(PluginServerTest, ANoKubeletIsAnErrorThatNamesTheSocket) {
  DevicePluginServer server(backend_, options_);
  auto started = server.Start();
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.message().find(Path("kubelet.sock")), std::string::npos) << started.message();
}

}  // namespace
}  // namespace tessera::deviceplugin
