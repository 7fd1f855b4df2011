#pragma once

// The agent's ledger: the MIG instances tessera created or adopted, kept in a file on the host
// (by default /var/lib/tessera/agent/mig-ledger.json) and written before and after every
// driver call that creates one, so a crash at any point leaves a record of what might exist.
// Only instances in the ledger are ever destroyed by the agent (unless reclaiming is on).

#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/node/mig_reconcile.h"

namespace tessera::agent {

class LedgerFile {
 public:
  explicit LedgerFile(std::string path) : path_(std::move(path)) {}

  // A missing file is an empty ledger; a malformed one is an error naming the file and field.
  Result<std::vector<node::LedgerEntry>> Load() const;
  // Atomic: temporary file, fsync, rename.
  Status Save(const std::vector<node::LedgerEntry>& entries) const;
  // Whether Save can work: an absolute path (the ledger must stay put whatever the working
  // directory), in an existing folder that takes new files (the temporary file is made there),
  // and not a folder itself; an existing ledger must be a file that can be read and written.
  // The error says what is wrong, without the path (callers name it with the flag or file).
  Status CheckUsable() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tessera::agent
