#pragma once

#include <map>
#include <string>

namespace tessera::model {

// The parts of a v1.ResourceQuota the scheduler reads: spec.hard, as quantity text.
struct ResourceQuota {
  std::string ns;
  std::string name;
  std::map<std::string, std::string> hard;
  std::string Key() const { return ns + "/" + name; }
};

}  // namespace tessera::model
