# Writes OUTPUT, a C++ source defining `const char* NAMESPACE::SYMBOL()` that returns INPUT's text.
file(READ ${INPUT} content HEX)
string(LENGTH "${content}" hex_length)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
file(WRITE ${OUTPUT} "// Generated from ${INPUT}; do not edit.\n")
file(APPEND ${OUTPUT} "namespace ${NAMESPACE} {\n")
file(APPEND ${OUTPUT} "namespace {\nconst char kData[] = {${bytes} 0x00};\n}  // namespace\n")
file(APPEND ${OUTPUT} "const char* ${SYMBOL}() { return kData; }\n}  // namespace ${NAMESPACE}\n")
