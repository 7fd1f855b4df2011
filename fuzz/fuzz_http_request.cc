// The whole request path: raw bytes on a TCP connection to the scheduler's HTTP listener (the
// Beast parser, the limits, the routes, the read and local gates) and on to the service over an
// embedded cluster. Any input must be answered or cut, never crash the process, and leave the
// listener serving the next connection.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "core/mig/catalog.h"
#include "scheduler/scheduler_service.h"
#include "scheduler_runtime/embedded_cluster.h"
#include "scheduler_runtime/http_server.h"
#include "sim/scenario.h"

namespace {

using tessera::scheduler_runtime::EmbeddedCluster;
using tessera::scheduler_runtime::HttpOptions;
using tessera::scheduler_runtime::HttpServer;

constexpr const char* kScenario = R"(
policy: { node: binpack, gpu: spread }
nodes:
  - name: node-a
    gpus:
      - model: "NVIDIA RTX PRO 6000 Blackwell Server Edition"
        mode: mig
        uuid: GPU-30512c46-708b-f374-5698-ee24be6cd626
  - name: node-b
    gpus: [{ model: "Tesla V100-PCIE-32GB", memoryMiB: 32768, uuid: GPU-b0 }]
)";

// One server for the whole run, as in production: state carries over between inputs.
int ServerPort() {
  static int port = [] {
    auto catalog = tessera::mig::GpuModelCatalog::Builtin();
    auto scenario = tessera::sim::LoadScenarioText(kScenario, catalog.value(), "fuzz.yaml");
    if (!scenario.ok()) std::abort();
    static EmbeddedCluster cluster;
    tessera::scheduler::ServiceOptions so;
    so.ready_wait = std::chrono::milliseconds(1);
    static auto* service = new tessera::scheduler::SchedulerService(scenario->config, so, cluster);
    EmbeddedCluster::Load(*scenario, service->view);
    HttpOptions options;
    options.bind = "127.0.0.1:0";
    options.limits.request_deadline = std::chrono::milliseconds(500);
    options.limits.max_body_bytes = 1u << 20;
    // A read check that allows one token: both branches of the gate are reached.
    options.read_access = [](std::string_view header, std::string_view) {
      return header == "Bearer fuzz" ? tessera::scheduler_runtime::ReadAccessDecision{200, ""}
                                     : tessera::scheduler_runtime::ReadAccessDecision{401, "no"};
    };
    static auto* server = new HttpServer(*service, options);
    if (!server->Listen().ok()) std::abort();
    std::thread([] { server->Serve(); }).detach();
    return server->port();
  }();
  return port;
}

// A connection from 127.0.0.N, N taking turns over 250 addresses: the client closes first, so
// each connection leaves a TIME_WAIT for a minute, and one source address has only ~28 000
// ephemeral ports, fewer than a 20-second run makes connections (it failed with
// EADDRNOTAVAIL). Every 127/8 address is loopback to the listener's gates, as 127.0.0.1 is.
int Connect(int port) {
  static uint32_t next_source = 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int attempt = 0; attempt < 250; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in source{};
    source.sin_family = AF_INET;
    source.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1 + (next_source++ % 250));
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&source), sizeof source) == 0 &&
        ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
      return fd;
    }
    const int error = errno;
    ::close(fd);
    if (error != EADDRNOTAVAIL && error != EADDRINUSE) break;  // not a lack of ports
  }
  std::abort();  // the listener stopped accepting: a failure worth a reproducer
}

// Reads until the server closes or `ms` pass without a byte.
void Drain(int fd, int ms) {
  char buffer[65536];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return;
    if (::recv(fd, buffer, sizeof buffer, 0) <= 0) return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = Connect(ServerPort());
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);  // the request ends here: the server answers or closes
  Drain(fd, 2000);
  ::close(fd);
  return 0;
}
