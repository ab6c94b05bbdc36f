// The stand-in NCCL (cuda/host_emulator/nccl_standin) through its API: the NCCL behaviours the
// GPU collective's host tests rely on. A collective waits for every rank; finalize is a meeting
// of the ranks (so releasing local ranks one after another from one thread would hang, which the
// collective's grouped teardown avoids); misuse NCCL leaves undefined is reported.
#include <nccl.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "nccl_standin_support.hpp"

namespace {

// `count` communicators of one id, created from this thread in one group.
std::vector<ncclComm_t> local_communicators(int count, bool blocking = true) {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = blocking ? 1 : 0;
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(count), nullptr);
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < count; ++r)
    REQUIRE(ncclCommInitRankConfig(&comms[static_cast<std::size_t>(r)], count, id, r, &config) ==
            ncclSuccess);
  const ncclResult_t end = ncclGroupEnd();
  REQUIRE((end == ncclSuccess || (!blocking && end == ncclInProgress)));
  for (ncclComm_t c : comms) {
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) REQUIRE(ncclCommGetAsyncError(c, &state) == ncclSuccess);
    REQUIRE(state == ncclSuccess);
  }
  return comms;
}

void release_grouped(const std::vector<ncclComm_t>& comms) {
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (ncclComm_t c : comms) REQUIRE(ncclCommAbort(c) == ncclSuccess);
  REQUIRE(ncclGroupEnd() == ncclSuccess);
}

}  // namespace

TEST_CASE("A stand-in all-reduce completes only once every rank has joined it", "[nccl_host]") {
  const std::vector<ncclComm_t> comms = local_communicators(2);
  dl::test::RankBuffer b0, b1;
  b0.upload(dl::test::rank_values(0, 0));
  b1.upload(dl::test::rank_values(1, 0));
  REQUIRE(ncclAllReduce(b0.data, b0.data, b0.n, ncclFloat, ncclSum, comms[0], b0.stream) ==
          ncclSuccess);
  REQUIRE(cudaEventRecord(b0.done, b0.stream) == cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(cudaEventQuery(b0.done) == cudaErrorNotReady);
  REQUIRE(ncclAllReduce(b1.data, b1.data, b1.n, ncclFloat, ncclSum, comms[1], b1.stream) ==
          ncclSuccess);
  REQUIRE(cudaEventSynchronize(b0.done) == cudaSuccess);
  const std::vector<float> sum =
      dl::test::naive_sum({dl::test::rank_values(0, 0), dl::test::rank_values(1, 0)});
  CHECK(b0.download() == sum);
  CHECK(b1.download() == sum);
  release_grouped(comms);
}

TEST_CASE("Stand-in finalize is a meeting of the ranks, complete when the last one comes",
          "[nccl_host]") {
  // Nonblocking, so the test can look at the first rank's finalize while it waits: blocking, it
  // would wait there for ever, as NCCL's does when one thread finalizes its ranks in turn.
  const std::vector<ncclComm_t> comms = local_communicators(2, false);
  const ncclResult_t first = ncclCommFinalize(comms[0]);
  CHECK((first == ncclInProgress || first == ncclSuccess));
  ncclResult_t state = ncclSuccess;
  for (int poll = 0; poll < 100; ++poll) {
    REQUIRE(ncclCommGetAsyncError(comms[0], &state) == ncclSuccess);
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  CHECK(state == ncclInProgress);
  (void)ncclCommFinalize(comms[1]);
  for (ncclComm_t c : comms) {
    state = ncclInProgress;
    const auto start = std::chrono::steady_clock::now();
    while (state == ncclInProgress && dl::test::seconds_since(start) < 5.0)
      REQUIRE(ncclCommGetAsyncError(c, &state) == ncclSuccess);
    CHECK(state == ncclSuccess);
    CHECK(ncclCommDestroy(c) == ncclSuccess);
  }
}

TEST_CASE("The stand-in reports misuse that NCCL leaves undefined", "[nccl_host]") {
  const std::vector<ncclComm_t> comms = local_communicators(2);
  dl::test::RankBuffer b;
  SECTION("a handle used after ncclCommAbort") {
    release_grouped(comms);
    ncclResult_t state = ncclSuccess;
    CHECK(ncclCommGetAsyncError(comms[0], &state) == ncclInvalidArgument);
    CHECK_THAT(ncclGetLastError(nullptr), Catch::Contains("not a live communicator"));
  }
  SECTION("a new call on a nonblocking communicator before its ncclInProgress was polled") {
    release_grouped(comms);
    const std::vector<ncclComm_t> nonblocking = local_communicators(2, false);
    CHECK(ncclAllReduce(b.data, b.data, 1, ncclFloat, ncclSum, nonblocking[0], b.stream) ==
          ncclInProgress);
    CHECK(ncclAllReduce(b.data, b.data, 1, ncclFloat, ncclSum, nonblocking[0], b.stream) ==
          ncclInvalidUsage);
    CHECK_THAT(ncclGetLastError(nonblocking[0]), Catch::Contains("still in progress"));
    release_grouped(nonblocking);
  }
  SECTION("an id that no ncclGetUniqueId made (one never broadcast)") {
    release_grouped(comms);
    ncclUniqueId zero{};
    ncclComm_t c = nullptr;
    CHECK(ncclCommInitRank(&c, 2, zero, 1) == ncclInvalidArgument);
    CHECK_THAT(ncclGetLastError(nullptr), Catch::Contains("not one ncclGetUniqueId made"));
  }
  SECTION("a fault specification it cannot read") {
    release_grouped(comms);
    dl::test::ScopedEnv fault("DL_NCCL_STANDIN_FAULT", "rank=1,kind=explode");
    ncclUniqueId id;
    REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
    ncclComm_t c = nullptr;
    CHECK(ncclCommInitRank(&c, 1, id, 0) == ncclSystemError);
    CHECK_THAT(ncclGetLastError(nullptr), Catch::Contains("kind=explode"));
  }
}
