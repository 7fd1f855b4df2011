# Warnings for tessera's own targets (not for third-party headers, included as SYSTEM).
function(tessera_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wcast-align -Wunused -Woverloaded-virtual
    -Wimplicit-fallthrough)
  # Float scores are computed as HAMi's Go float32 code does: no fused multiply-add.
  target_compile_options(${target} PRIVATE -ffp-contract=off)
  if(TESSERA_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
