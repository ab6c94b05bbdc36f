// Catch2's implementation (the runner, reporters and assertion machinery), compiled once for
// every test program: catch_main.cpp's plain main and host_grid_main.cpp's own both call it, so
// the single header's implementation is not compiled twice per build. At -O0 (tests/meson.build):
// it is the harness, not code under test, and optimizing it cost most of its compile time, above
// all in the sanitizer builds (about 60 s against 20 s with ASan and UBSan).
#define CATCH_CONFIG_RUNNER
#include "catch_session.hpp"

#include <catch2/catch.hpp>

namespace dl::testing {
namespace {

// The JUnit report every unit suite writes (tests/meson.build; scripts/count_results.py counts its
// test cases). Catch2's own junit reporter keeps every passing assertion until the run ends, its
// expression expanded to text, although it writes only the failing ones: a suite that compares a
// million values one by one spent 42 s of its 0.5 s in that (backend_elementwise; a minute more
// under each sanitizer). This one keeps the first passing assertion of each section, which is
// what makes the report list that section as a test case, and every other result as before; the
// report is the same file.
class JunitKeepingFailuresReporter : public Catch::JunitReporter {
 public:
  using Catch::JunitReporter::JunitReporter;

  static std::string getDescription() {
    return "Catch2's JUnit report, keeping only the passing assertions it needs in memory";
  }

  bool assertionEnded(Catch::AssertionStats const& stats) override {
    const bool passed = stats.assertionResult.getResultType() == Catch::ResultWas::Ok;
    if (passed && !m_sectionStack.empty() && !m_sectionStack.back()->assertions.empty()) {
      return true;
    }
    return Catch::JunitReporter::assertionEnded(stats);
  }
};

}  // namespace

CATCH_REGISTER_REPORTER("junit-failures", JunitKeepingFailuresReporter)

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
