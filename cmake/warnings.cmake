# Warnings for tessera's own targets (not for third-party headers, included as SYSTEM).
function(tessera_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wcast-align -Wunused -Woverloaded-virtual
    -Wimplicit-fallthrough)
  # GCC 12 reports -Wrestrict inside std::string concatenation at -O2 (GCC bug 105329).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  # Float scores are computed as HAMi's Go float32 code does: no fused multiply-add.
  target_compile_options(${target} PRIVATE -ffp-contract=off)
  if(TESSERA_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
