// NcclCommunicator (cuda/nccl_collective.cpp, the file the CUDA build compiles) with several
// NCCL ranks, without a GPU: on the host emulator's streams and the stand-in NCCL
// (cuda/host_emulator/nccl_standin), which really sums between ranks. Ranks are local ranks of
// one communicator (one thread each, as device group leaders) or separate communicators in
// threads joined through a ThreadProcessGroup, as processes are through MPI.
//
// The stand-in adds in rank order, so results are compared bit for bit with a naive sum.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/error.hpp"
#include "nccl_collective.hpp"
#include "nccl_standin_support.hpp"
#include "parallel/collective.hpp"
#include "thread_process_group.hpp"

namespace {

using dl::gpu::NcclCommunicator;
using dl::test::RankBuffer;
using dl::test::ThreadJob;
using dl::test::ThreadProcessGroup;

constexpr int kRounds = 3;

std::vector<NcclCommunicator::LocalRank> local_ranks(int first, int count) {
  std::vector<NcclCommunicator::LocalRank> ranks;
  for (int r = first; r < first + count; ++r) ranks.push_back({r, r});
  return ranks;
}

// What one rank saw: per round, its all-reduce result then its broadcast result.
using Seen = std::vector<std::vector<float>>;

// kRounds all-reduces and broadcasts (from the last rank) of rank `rank`, local rank `local`.
Seen sum_and_broadcast(NcclCommunicator& comm, int local, int rank) {
  RankBuffer b;
  Seen seen;
  for (int round = 0; round < kRounds; ++round) {
    b.upload(dl::test::rank_values(rank, round));
    comm.all_reduce_sum(local, b.data, b.n, b.stream);
    DL_CUDA_CALL(cudaEventRecord(b.done, b.stream));
    comm.wait(local, b.done);
    seen.push_back(b.download());
    b.upload(dl::test::rank_values(rank, round + 100));
    comm.broadcast(local, b.data, b.n, comm.ranks() - 1, b.stream);
    DL_CUDA_CALL(cudaEventRecord(b.done, b.stream));
    comm.wait(local, b.done);
    seen.push_back(b.download());
  }
  return seen;
}

void check_every_rank(const std::vector<Seen>& seen) {
  const int ranks = static_cast<int>(seen.size());
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::vector<float>> inputs;
    for (int r = 0; r < ranks; ++r) inputs.push_back(dl::test::rank_values(r, round));
    const std::vector<float> sum = dl::test::naive_sum(inputs);
    const std::vector<float> root = dl::test::rank_values(ranks - 1, round + 100);
    for (int r = 0; r < ranks; ++r) {
      INFO("rank " << r << " of " << ranks << ", round " << round);
      CHECK(seen[static_cast<std::size_t>(r)][2 * static_cast<std::size_t>(round)] == sum);
      CHECK(seen[static_cast<std::size_t>(r)][2 * static_cast<std::size_t>(round) + 1] == root);
    }
  }
}

// `ranks` separate communicators, one per thread, each with one local rank, meeting through a
// ThreadProcessGroup: body(comm, rank, buffer) runs on each; the communicators end on their
// threads, before the buffers: cudaFree waits for the device (here as with CUDA), which work
// still queued behind a failed collective keeps busy until the communicator is released.
void as_processes(int ranks, const std::function<void(NcclCommunicator&, int, RankBuffer&)>& body) {
  auto job = std::make_shared<ThreadJob>(ranks);
  dl::test::on_threads(ranks, [&](int r) {
    RankBuffer buffer;
    ThreadProcessGroup processes(job, r);
    NcclCommunicator comm(local_ranks(r, 1), ranks, processes);
    body(comm, r, buffer);
  });
}

// The stand-in's hang fault on rank 1's first call, while the returned guard lives (none when
// `hang` is false).
std::unique_ptr<dl::test::ScopedEnv> hang_rank_1_if(bool hang) {
  if (!hang) return nullptr;
  return std::make_unique<dl::test::ScopedEnv>("DL_NCCL_STANDIN_FAULT", "rank=1,call=1,kind=hang");
}

// Local rank r's all-reduce of its round-0 values into b, waited for.
void sum_and_wait(NcclCommunicator& comm, int r, RankBuffer& b) {
  b.upload(dl::test::rank_values(r, 0));
  comm.all_reduce_sum(r, b.data, b.n, b.stream);
  DL_CUDA_CALL(cudaEventRecord(b.done, b.stream));
  comm.wait(r, b.done);
}

}  // namespace

TEST_CASE("NCCL ranks of one process sum and broadcast, each driven by its own thread",
          "[nccl_host]") {
  const int ranks = GENERATE(2, 3);
  const bool nonblocking = GENERATE(false, true);
  INFO(ranks << " ranks, " << (nonblocking ? "nonblocking" : "blocking"));
  std::unique_ptr<dl::test::ScopedEnv> env;
  if (nonblocking) env = std::make_unique<dl::test::ScopedEnv>("NCCL_COMM_BLOCKING", "0");
  auto job = std::make_shared<ThreadJob>(1);
  ThreadProcessGroup one(job, 0);
  std::vector<Seen> seen(static_cast<std::size_t>(ranks));
  auto comm = std::make_unique<NcclCommunicator>(local_ranks(0, ranks), ranks, one);
  REQUIRE(comm->local_ranks() == ranks);
  dl::test::on_threads(
      ranks, [&](int r) { seen[static_cast<std::size_t>(r)] = sum_and_broadcast(*comm, r, r); });
  check_every_rank(seen);
  // Teardown from this one thread: the local ranks are finalized in one group, since each
  // finalize waits for the others (the stand-in's does, as NCCL's).
  const auto start = std::chrono::steady_clock::now();
  comm.reset();
  CHECK(dl::test::seconds_since(start) < 2.0);
}

TEST_CASE("NCCL ranks of separate communicators (as processes) sum and broadcast", "[nccl_host]") {
  const int ranks = GENERATE(2, 3);
  // NCCL_COMM_BLOCKING=0: every call may answer ncclInProgress, which the collective polls away.
  const bool nonblocking = GENERATE(false, true);
  INFO(ranks << " ranks, " << (nonblocking ? "nonblocking" : "blocking"));
  std::unique_ptr<dl::test::ScopedEnv> env;
  if (nonblocking) env = std::make_unique<dl::test::ScopedEnv>("NCCL_COMM_BLOCKING", "0");
  std::vector<Seen> seen(static_cast<std::size_t>(ranks));
  as_processes(ranks, [&](NcclCommunicator& comm, int r, RankBuffer&) {
    seen[static_cast<std::size_t>(r)] = sum_and_broadcast(comm, 0, r);
  });
  check_every_rank(seen);
}

TEST_CASE("A communicator that cannot be set up reports NCCL's reason and releases its ranks",
          "[nccl_host]") {
  dl::test::ScopedEnv fault("DL_NCCL_STANDIN_FAULT", "rank=one");
  auto job = std::make_shared<ThreadJob>(1);
  ThreadProcessGroup one(job, 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(NcclCommunicator(local_ranks(0, 2), 2, one),
                    Catch::Contains("setting up one communicator over 2 GPU(s) of 1 process(es)") &&
                        Catch::Contains("DL_NCCL_STANDIN_FAULT: cannot read \"rank=one\""));
  CHECK(dl::test::seconds_since(start) < 2.0);
}

TEST_CASE("A failed init of a second local rank ends the set-up without waiting for peers",
          "[nccl_host]") {
  // Local rank 1 asks for NCCL rank 5 of 2, which NCCL refuses; local rank 0's init in the same
  // group must not be left waiting for its peer (rank 1 of 2, never made).
  auto job = std::make_shared<ThreadJob>(1);
  ThreadProcessGroup one(job, 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(NcclCommunicator({{0, 0}, {1, 5}}, 2, one),
                    Catch::Contains("setting up one communicator over 2 GPU(s)") &&
                        Catch::Contains("rank 5 of 2"));
  CHECK(dl::test::seconds_since(start) < 2.0);
}

TEST_CASE("An asynchronous error on one rank fails every rank's wait within a bounded time",
          "[nccl_host]") {
  constexpr int kRanks = 3;
  // Rank 1's second collective breaks once started; the first succeeds everywhere.
  dl::test::ScopedEnv fault("DL_NCCL_STANDIN_FAULT", "rank=1,call=2,kind=async_error");
  // After the error the trainer aborts; without that the destructor must not hang either.
  const bool abort_after = GENERATE(true, false);
  INFO((abort_after ? "aborted after the error" : "destroyed after the error"));
  std::vector<std::string> errors(kRanks);
  std::vector<double> took(kRanks, 0.0);
  std::vector<std::vector<float>> first(kRanks);
  const auto start = std::chrono::steady_clock::now();
  as_processes(kRanks, [&](NcclCommunicator& comm, int r, RankBuffer& b) {
    b.upload(dl::test::rank_values(r, 0));
    comm.all_reduce_sum(0, b.data, b.n, b.stream);
    DL_CUDA_CALL(cudaEventRecord(b.done, b.stream));
    comm.wait(0, b.done);
    first[static_cast<std::size_t>(r)] = b.download();
    const auto begin = std::chrono::steady_clock::now();
    try {
      comm.all_reduce_sum(0, b.data, b.n, b.stream);
      DL_CUDA_CALL(cudaEventRecord(b.done, b.stream));
      comm.wait(0, b.done);
    } catch (const dl::Error& e) {
      errors[static_cast<std::size_t>(r)] = e.what();
    }
    took[static_cast<std::size_t>(r)] = dl::test::seconds_since(begin);
    if (abort_after) comm.abort();
  });
  const double total = dl::test::seconds_since(start);
  const std::vector<float> sum = dl::test::naive_sum(
      {dl::test::rank_values(0, 0), dl::test::rank_values(1, 0), dl::test::rank_values(2, 0)});
  for (int r = 0; r < kRanks; ++r) {
    INFO("rank " << r << ": " << errors[static_cast<std::size_t>(r)]);
    CHECK(first[static_cast<std::size_t>(r)] == sum);
    CHECK(took[static_cast<std::size_t>(r)] < 5.0);
    CHECK_THAT(errors[static_cast<std::size_t>(r)],
               Catch::Contains("another process or a network link failed"));
    CHECK_THAT(errors[static_cast<std::size_t>(r)],
               Catch::Contains(r == 1 ? "injected asynchronous error on rank 1"
                                      : "rank 1 of the communicator failed"));
  }
  CHECK(total < std::chrono::duration<double>(dl::test::kBounded).count());
}

TEST_CASE("abort() wakes a rank waiting for a peer that never arrives", "[nccl_host]") {
  // absent: rank 1 never calls; hung: rank 1 calls, but its collective never runs.
  const bool peer_hangs = GENERATE(false, true);
  INFO((peer_hangs ? "peer's collective hangs" : "peer never arrives"));
  const auto fault = hang_rank_1_if(peer_hangs);
  auto job = std::make_shared<ThreadJob>(1);
  ThreadProcessGroup one(job, 0);
  NcclCommunicator comm(local_ranks(0, 2), 2, one);
  const int waiters = peer_hangs ? 2 : 1;
  std::atomic<int> woke{0};
  int woke_before_abort = -1;
  std::vector<std::string> outcome(2);
  std::chrono::steady_clock::time_point aborted_at;
  std::thread aborter([&] {
    // Long enough that a wait which was going to end without the abort has ended.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    woke_before_abort = woke;
    aborted_at = std::chrono::steady_clock::now();
    comm.abort();
  });
  dl::test::on_threads(waiters, [&](int r) {
    RankBuffer b;
    try {
      sum_and_wait(comm, r, b);
      outcome[static_cast<std::size_t>(r)] += "returned";
    } catch (const dl::CollectiveAborted&) {
      outcome[static_cast<std::size_t>(r)] += "aborted";
    }
    ++woke;
  });
  const double after_abort = dl::test::seconds_since(aborted_at);
  aborter.join();
  CHECK(woke_before_abort == 0);
  CHECK(comm.aborted());
  for (int r = 0; r < waiters; ++r) CHECK(outcome[static_cast<std::size_t>(r)] == "aborted");
  CHECK(after_abort < 2.0);
  CHECK_THROWS_AS(comm.all_reduce_sum(0, nullptr, 1, nullptr), dl::CollectiveAborted);
}

TEST_CASE("A communicator destroyed while an exception unwinds aborts instead of finalizing",
          "[nccl_host]") {
  // Rank 1 fails outside the collective (the stack unwinds through its communicator) while
  // rank 0 waits in a collective rank 1 never joins: the unwinding must not wait for rank 0,
  // so the error can reach abort_job; rank 0 is then ended by its own abort (here) or MPI.
  auto job = std::make_shared<ThreadJob>(2);
  std::atomic<bool> rank1_gone{false};
  std::string rank0;
  std::string rank1;
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<NcclCommunicator> rank0_comm;
  std::thread first([&] {
    ThreadProcessGroup processes(job, 0);
    rank0_comm = std::make_unique<NcclCommunicator>(local_ranks(0, 1), 2, processes);
  });
  try {
    ThreadProcessGroup processes(job, 1);
    NcclCommunicator comm(local_ranks(1, 1), 2, processes);
    first.join();
    throw dl::Error(dl::ExitCode::kDataError, "rank 1 failed reading its data");
  } catch (const dl::Error& e) {
    rank1 = e.what();
    rank1_gone = true;
  }
  CHECK(rank1 == "rank 1 failed reading its data");
  CHECK(dl::test::seconds_since(start) < 2.0);
  RankBuffer b;
  std::thread waiter([&] {
    try {
      rank0_comm->all_reduce_sum(0, b.data, b.n, b.stream);
      DL_CUDA_CALL(cudaEventRecord(b.done, b.stream));
      rank0_comm->wait(0, b.done);
      rank0 = "returned";
    } catch (const dl::CollectiveAborted&) {
      rank0 = "aborted";
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  rank0_comm->abort();
  waiter.join();
  CHECK(rank1_gone);
  CHECK(rank0 == "aborted");
}

TEST_CASE("abort() racing with collectives in flight on every local rank reports no misuse",
          "[nccl_host]") {
  // Each local rank's thread all-reduces and waits in a loop while another thread aborts: the
  // call locks must keep abort's ncclCommAbort from meeting another thread inside the same
  // communicator (the stand-in reports that as ncclInvalidUsage) and from freeing one in use.
  constexpr int kRanks = 3;
  constexpr int kMaxRounds = 100000;  // the abort comes long before
  const int abort_after_ms = GENERATE(0, 5, 40);
  auto job = std::make_shared<ThreadJob>(1);
  ThreadProcessGroup one(job, 0);
  NcclCommunicator comm(local_ranks(0, kRanks), kRanks, one);
  std::vector<std::string> ended(kRanks);
  std::vector<int> rounds(kRanks, 0);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(abort_after_ms));
    comm.abort();
  });
  dl::test::on_threads(kRanks, [&](int r) {
    RankBuffer b(257);
    try {
      for (int round = 0; round < kMaxRounds; ++round) {
        comm.all_reduce_sum(r, b.data, b.n, b.stream);
        DL_CUDA_CALL(cudaEventRecord(b.done, b.stream));
        comm.wait(r, b.done);
        rounds[static_cast<std::size_t>(r)] = round + 1;
      }
      ended[static_cast<std::size_t>(r)] = "finished";
    } catch (const dl::CollectiveAborted&) {
      ended[static_cast<std::size_t>(r)] = "aborted";
    } catch (const std::exception& e) {
      ended[static_cast<std::size_t>(r)] = e.what();
    }
  });
  aborter.join();
  for (int r = 0; r < kRanks; ++r) {
    INFO("rank " << r << " after " << rounds[static_cast<std::size_t>(r)] << " rounds");
    CHECK(ended[static_cast<std::size_t>(r)] == "aborted");
  }
}

TEST_CASE("A wait longer than parallel.timeout fails with its message instead of waiting for ever",
          "[nccl_host]") {
  // absent: rank 1 never calls; hung: rank 1 calls, but its collective never runs. Nothing
  // reports either to rank 0: only its own clock can end the wait.
  const bool peer_hangs = GENERATE(false, true);
  INFO((peer_hangs ? "peer's collective hangs" : "peer never arrives"));
  const auto fault = hang_rank_1_if(peer_hangs);
  auto job = std::make_shared<ThreadJob>(1);
  ThreadProcessGroup one(job, 0);
  const auto timeout = std::chrono::milliseconds(300);
  NcclCommunicator comm(local_ranks(0, 2), 2, one, timeout);
  const int waiters = peer_hangs ? 2 : 1;
  std::vector<std::string> messages(2);
  std::vector<double> waited(2, 0.0);
  dl::test::on_threads(waiters, [&](int r) {
    RankBuffer b;
    const auto start = std::chrono::steady_clock::now();
    try {
      sum_and_wait(comm, r, b);
    } catch (const dl::CollectiveAborted&) {
      messages[static_cast<std::size_t>(r)] = "aborted";  // woken by the other rank's abort
    } catch (const dl::Error& e) {
      messages[static_cast<std::size_t>(r)] = e.what();
    }
    waited[static_cast<std::size_t>(r)] = dl::test::seconds_since(start);
    // What the trainer does with a worker's failure: abort the collective, which wakes the rest.
    comm.abort();
  });
  // Whichever waiter's clock ran out first failed with the timeout; its abort woke the other.
  int timed_out = 0;
  for (int r = 0; r < waiters; ++r) {
    INFO("local rank " << r);
    const std::string& message = messages[static_cast<std::size_t>(r)];
    if (message == "aborted") continue;
    ++timed_out;
    CHECK_THAT(message, Catch::Contains(fmt::format(
                            "NCCL rank {}: a collective has waited 300 ms (parallel.timeout)", r)));
    CHECK_THAT(message, Catch::Contains("Raise parallel.timeout"));
    CHECK(waited[static_cast<std::size_t>(r)] >= 0.3);
    CHECK(waited[static_cast<std::size_t>(r)] < 3.0);
  }
  CHECK(timed_out >= 1);
}
