// The meeting point of the thread and GPU collectives (src/parallel/rendezvous.hpp).
#include "parallel/rendezvous.hpp"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

TEST_CASE("a rendezvous lets no thread through before all have arrived, meeting after meeting",
          "[rendezvous]") {
  constexpr int kThreads = 3;
  constexpr int kMeetings = 200;
  dl::Rendezvous rendezvous(kThreads);
  std::atomic<int> arrivals{0};
  std::atomic<int> early{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int m = 0; m < kMeetings; ++m) {
        arrivals.fetch_add(1);
        rendezvous.arrive();
        // Everyone has arrived at meeting m, and nobody can arrive at m + 1 before this thread
        // has passed the second meeting below.
        if (arrivals.load() != (m + 1) * kThreads) early.fetch_add(1);
        rendezvous.arrive();
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(early.load() == 0);
  CHECK(arrivals.load() == kThreads * kMeetings);
}

TEST_CASE("abort wakes a thread waiting at a rendezvous, and later arrivals throw",
          "[rendezvous]") {
  dl::Rendezvous rendezvous(2);
  std::atomic<bool> aborted{false};
  std::thread waiter([&] {
    try {
      rendezvous.arrive();  // the second participant never comes
    } catch (const dl::CollectiveAborted&) {
      aborted = true;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(aborted.load());
  rendezvous.abort();
  waiter.join();
  CHECK(aborted.load());
  CHECK(rendezvous.aborted());
  CHECK_THROWS_AS(rendezvous.arrive(), dl::CollectiveAborted);
}

TEST_CASE("a rendezvous of one never waits", "[rendezvous]") {
  dl::Rendezvous alone(1);
  alone.arrive();
  alone.arrive();
  CHECK_FALSE(alone.aborted());
  CHECK_THROWS_AS(dl::Rendezvous(0), dl::InternalError);
}
