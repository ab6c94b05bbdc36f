// The data readers' loop (parallel_for.hpp): every index once, and a stop signal watched while the
// data are read (core/stop_request.hpp) ends it early with StopRequested; unwatched, a flag set
// to a signal changes nothing (eval, predict and the training loop's own reads).
#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <vector>

#include "core/stop_request.hpp"
#include "data/parallel_for.hpp"

namespace {

constexpr std::size_t kIndices = 1000;

}  // namespace

TEST_CASE("parallel_for_each_index runs every index once", "[data][parallel_for]") {
  std::vector<std::atomic<int>> runs(kIndices);
  dl::parallel_for_each_index(kIndices, [&](std::size_t i) {
    ++runs[i];
    return true;
  });
  for (std::size_t i = 0; i < kIndices; ++i) CHECK(runs[i] == 1);
}

TEST_CASE("a watched stop signal ends the readers' loop with StopRequested",
          "[data][parallel_for]") {
  std::atomic<int> flag{0};
  const dl::StopRequestScope watch(&flag);
  std::atomic<std::size_t> done{0};
  const auto read = [&] {
    dl::parallel_for_each_index(kIndices, [&](std::size_t) {
      ++done;
      return true;
    });
  };
  read();  // no signal yet: every index
  CHECK(done.load() == kIndices);
  flag = SIGTERM;  // a signal before the next read's first index: none is started
  done = 0;
  int signal = 0;
  try {
    read();
  } catch (const dl::StopRequested& stop) {
    signal = stop.signal();
  }
  CHECK(signal == SIGTERM);
  CHECK(done.load() == 0);
  CHECK(dl::stop_requested() == SIGTERM);
}

TEST_CASE("a stop signal nobody watches leaves the loop alone", "[data][parallel_for]") {
  std::atomic<int> flag{SIGTERM};
  { const dl::StopRequestScope watch(&flag); }  // watched, then no longer
  CHECK(dl::stop_requested() == 0);
  std::atomic<std::size_t> done{0};
  dl::parallel_for_each_index(kIndices, [&](std::size_t) {
    ++done;
    return true;
  });
  CHECK(done.load() == kIndices);
}
