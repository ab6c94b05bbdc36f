// Catch2's implementation (the runner, reporters and assertion machinery), compiled once for
// every test program: catch_main.cpp's plain main and host_grid_main.cpp's own both call it, so
// the single header's implementation is not compiled twice per build. At -O0 (tests/meson.build):
// it is the harness, not code under test, and optimizing it cost most of its compile time, above
// all in the sanitizer builds (about 60 s against 20 s with ASan and UBSan).
#define CATCH_CONFIG_RUNNER
#include "catch_session.hpp"

#include <catch2/catch.hpp>

namespace dl::testing {

CatchSessionResult run_catch_session(int argc, char* argv[]) {
  Catch::Session session;
  CatchSessionResult result;
  result.status = session.applyCommandLine(argc, argv);
  if (result.status != 0) return result;
  result.status = session.run();
  const auto& config = session.configData();
  result.ran_cases = !config.listTests && !config.listTags;
  result.filtered = !config.testsOrTags.empty();
  return result;
}

}  // namespace dl::testing
