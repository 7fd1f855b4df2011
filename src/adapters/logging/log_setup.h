#pragma once

#include <spdlog/formatter.h>

#include <memory>
#include <string>
#include <string_view>

// The process's log: one line per message on stderr, with the message's control characters
// escaped, so that a name a client chose (a pod's, a node's) can neither split a line nor forge
// one, nor send escape sequences to an operator's terminal.
namespace tessera::logging {

// `text` with every byte below 0x20 and 0x7f written as \n, \r, \t or \xNN, and backslashes as
// they are; other bytes (UTF-8 included) unchanged.
std::string EscapeControlCharacters(std::string_view text);

// Formats as `inner` does, after escaping the message's control characters.
std::unique_ptr<spdlog::formatter> MakeEscapingFormatter(std::unique_ptr<spdlog::formatter> inner);

// Replaces the default logger (stdout) with one on stderr that escapes messages.
void InstallProcessLogger();

}  // namespace tessera::logging
