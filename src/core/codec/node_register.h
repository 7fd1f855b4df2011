#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/model/device.h"

namespace tessera::codec {

// hami.io/node-nvidia-register: a JSON array of DeviceInfo. Keys match case-insensitively,
// unknown keys are ignored, an absent "health" means unhealthy (hami-protocol.md 1.1.1).
Result<std::vector<model::GpuDevice>> DecodeNodeRegister(std::string_view text);
std::string EncodeNodeRegister(const std::vector<model::GpuDevice>& devices);

// hami.io/node-nvidia-score: [{"uuid":"GPU-0","score":{"GPU-1":100}}, ...].
Result<model::PairScores> DecodePairScores(std::string_view text);
std::string EncodePairScores(const model::PairScores& scores);

}  // namespace tessera::codec
