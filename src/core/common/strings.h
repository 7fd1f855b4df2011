#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// Splits on `sep`, keeping empty pieces (annotation grammars depend on positions).
std::vector<std::string> SplitKeepEmpty(std::string_view text, char sep);
// Splits on `sep`, trims each piece and drops the empty ones (comma lists in annotations).
std::vector<std::string> SplitTrimmed(std::string_view text, char sep);
std::string Trim(std::string_view text);
std::string ToLower(std::string_view text);
std::string ToUpper(std::string_view text);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool StartsWith(std::string_view text, std::string_view prefix);
bool EndsWith(std::string_view text, std::string_view suffix);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
// Go's strconv.ParseBool: 1 t T TRUE true True 0 f F FALSE false False.
bool ParseGoBool(std::string_view text, bool* out);
// Parses a decimal integer that must use the whole string, with at most one leading '+' or '-'
// (as Go's strconv.ParseInt). Callers reject negatives themselves where they must.
bool ParseInt64(std::string_view text, long long* out);
// Standard base64 with padding (RFC 4648), as AdmissionReview patches and kubeconfig data use.
std::string Base64Encode(std::string_view bytes);
// False when `text` is not valid padded base64 (whitespace is ignored).
bool Base64Decode(std::string_view text, std::string* out);
// A 64-bit hash that is the same on every build, platform and run (FNV-1a from a fixed salted
// basis, then a 64-bit finaliser so that similar strings spread over the whole range), unlike
// std::hash. For orders that must not change between restarts or replicas.
uint64_t StableHash(std::string_view text);

// Escapes &, <, > and " for HTML text and attribute values.
std::string HtmlEscape(std::string_view text);

}  // namespace tessera
