#include "adapters/kube/events.h"

#include <chrono>

#include "adapters/kube/json_text.h"
#include "adapters/kube/time_format.h"
#include "adapters/kube/url.h"

namespace tessera::kube {
namespace {

constexpr size_t kMaxMessageBytes = 1024;  // the API server's limit for event notes

// Cuts at a UTF-8 character boundary at or below `limit` bytes.
std::string Truncate(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

}  // namespace

EventSpec PodEvent(const std::string& ns, const std::string& name, const std::string& uid,
                   bool warning, const std::string& reason, const std::string& message) {
  EventSpec e;
  e.ns = ns;
  e.pod_name = name;
  e.pod_uid = uid;
  e.type = warning ? "Warning" : "Normal";
  e.reason = reason;
  e.message = message;
  return e;
}

EventSpec NodeEvent(const std::string& node_name, bool warning, const std::string& reason,
                    const std::string& message) {
  EventSpec e = PodEvent("default", node_name, "", warning, reason, message);
  e.kind = "Node";
  return e;
}

Json EventObject(const EventSpec& event) {
  const std::string component =
      event.reporting_component.empty() ? "tessera" : event.reporting_component;
  const std::string now = FormatTime(std::chrono::system_clock::now());
  Json object = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      // generateName: a unique name without coordination; the server appends a random suffix.
      {"metadata", {{"generateName", event.pod_name + "."}, {"namespace", event.ns}}},
      {"involvedObject", {{"apiVersion", "v1"}, {"kind", event.kind}, {"name", event.pod_name}}},
      {"type", event.type},
      {"reason", event.reason},
      {"message", Truncate(event.message, kMaxMessageBytes)},
      {"source", {{"component", component}}},
      {"reportingComponent", component},
      {"reportingInstance", event.reporting_instance},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1}};
  if (event.kind != "Node") object["involvedObject"]["namespace"] = event.ns;
  if (!event.pod_uid.empty()) object["involvedObject"]["uid"] = event.pod_uid;
  if (!event.reporting_instance.empty()) {
    object["source"]["host"] = event.reporting_instance;
  }
  return object;
}

Status CreateEvent(Client& client, const EventSpec& event,
                   const std::function<bool()>& should_stop) {
  const std::string what = "event " + event.reason + " on " +
                           (event.kind == "Node" ? "node " : "pod " + event.ns + "/") +
                           event.pod_name;
  if (event.type != "Normal" && event.type != "Warning") {
    return Error{what + ": type \"" + event.type + "\" is not Normal or Warning"};
  }
  if (event.ns.empty() || event.pod_name.empty() || event.reason.empty()) {
    return Error{what + ": namespace, pod name and reason are required"};
  }
  Response response =
      client.Send({"POST", "/api/v1/namespaces/" + EscapeUrlComponent(event.ns) + "/events",
                   ToJsonText(EventObject(event)), "application/json"},
                  should_stop);
  if (!response.ok()) return response.ToError("create " + what);
  return Status::Ok();
}

}  // namespace tessera::kube
