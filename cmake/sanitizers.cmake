# Sanitizer builds (scripts/run-tests.sh). The optimisation and debug levels come from the
# build type the script chooses (-O1 -g1: line tables are enough for readable reports).
if(TESSERA_SANITIZE)
  message(STATUS "tessera: sanitizers ${TESSERA_SANITIZE}")
  add_compile_options(-fsanitize=${TESSERA_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${TESSERA_SANITIZE})
  if(TESSERA_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()

# Extra compile options for the test programs only (tests/), e.g. -O0 in the sanitizer builds:
# the code under test keeps the build type's optimisation, the test code compiles in half the
# time, and the sanitizers check both.
set(TESSERA_TEST_COMPILE_OPTIONS "" CACHE STRING "Compile options added to tests/ targets")
