#pragma once

// The node agent's configuration: HAMi's device-config.yaml `nvidia` section, then the node's
// entry of /config/config.json (hami-node.md 3.2, 3.3): entries whose name is this node apply
// in order, later ones overriding; filterdevices replaces the filter when it names anything.

#include <string>

#include "core/codec/json_util.h"
#include "core/common/result.h"
#include "core/config/scheduler_config.h"
#include "core/node/registration.h"

namespace tessera::node {

NodeDeviceConfig FromDeviceConfig(const config::NvidiaConfig& nvidia);

// `node_config` is config.json's content (nullptr: no file). Unlike HAMi, an unreadable file is
// an error that names the field, not a silent empty mode (W15).
Result<NodeDeviceConfig> ApplyNodeConfig(NodeDeviceConfig base, const codec::Json* node_config,
                                         const std::string& node_name);

}  // namespace tessera::node
