// Runs under a launcher (scripts/mpirun_local.sh -np N): checks make_process_group's ranks and
// every collective against values each rank can compute for all ranks, then prints
// "mpi smoke: ok" on rank 0.
//   mpi_smoke <expected ranks>                 the checks
//   mpi_smoke <expected ranks> --abort <rank>  that rank calls abort_job(kAbortExitCode) while
//                                              the others wait in a barrier (mpi_abort.sh)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "parallel/process_group.hpp"

namespace {

constexpr int kAbortExitCode = 3;
constexpr std::size_t kElements = 100003;  // odd, not a multiple of any vector width
constexpr std::size_t kBroadcastBytes = 4099;

class Checker {
 public:
  explicit Checker(int rank) : rank_(rank) {}
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    ++failures_;
    std::fprintf(stderr, "mpi smoke: rank %d: %s\n", rank_, what.c_str());
  }
  int failures() const { return failures_; }

 private:
  int rank_;
  int failures_ = 0;
};

// Values that are exact in float and whose sums over a few ranks are exact too, so every rank
// can state the expected sum exactly.
float float_value(int rank, std::size_t i) {
  return static_cast<float>(rank + 1) + 0.25F * static_cast<float>(i % 1024);
}
double double_value(int rank, std::size_t i) {
  return static_cast<double>(i) * 1e6 - 0.5 * static_cast<double>(rank);
}
// Values of widely spread magnitudes and both signs: their sum's last bits depend on the order.
float spread_value(int rank, std::size_t i) {
  const std::uint64_t h = (static_cast<std::uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ULL ^
                          (i + 1) * 0xC2B2AE3D27D4EB4FULL;
  const float mantissa = 1.0F + static_cast<float>(h % 1000003) / 1000003.0F;
  return std::ldexp((h >> 40) % 2 == 0 ? mantissa : -mantissa, static_cast<int>((h >> 20) % 24));
}
// The job's sum order over ranks (parallel/sum_order.hpp) written out from its definition.
float tree_of_ranks(int first, int count, std::size_t i) {
  if (count == 1) return spread_value(first, i);
  int left = 1;
  while (left * 2 < count) left *= 2;
  return tree_of_ranks(first, left, i) + tree_of_ranks(first + left, count - left, i);
}
unsigned char broadcast_byte(int root, std::size_t i) {
  return static_cast<unsigned char>((i * 31 + static_cast<std::size_t>(root) * 7) & 0xFF);
}
std::uint64_t gathered_value(int rank) {
  return (std::uint64_t{1} << 40) + static_cast<std::uint64_t>(rank) * 1000003;
}

std::string gather_part(int rank) {
  constexpr std::size_t kBytesPerRank = 1000;
  std::string part(static_cast<std::size_t>(rank) * kBytesPerRank + 3, '\0');
  for (std::size_t i = 0; i < part.size(); ++i)
    part[i] = static_cast<char>(broadcast_byte(rank, i));
  return part;
}

int run_checks(dl::ProcessGroup& group, int expected_size) {
  const int rank = group.rank();
  const int size = group.size();
  Checker check(rank);
  check.expect(size == expected_size,
               "size " + std::to_string(size) + ", expected " + std::to_string(expected_size));
  check.expect(rank >= 0 && rank < size, "rank " + std::to_string(rank) + " out of range");
  check.expect(group.name().rfind("MPI (", 0) == 0, "name '" + group.name() + "'");

  const std::vector<std::uint64_t> ranks = group.all_gather(static_cast<std::uint64_t>(rank));
  check.expect(ranks.size() == static_cast<std::size_t>(size), "all_gather size");
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    check.expect(ranks[r] == r, "all_gather of ranks: position " + std::to_string(r) + " holds " +
                                    std::to_string(ranks[r]));
  }
  const std::vector<std::uint64_t> wide = group.all_gather(gathered_value(rank));
  for (int r = 0; r < size && static_cast<std::size_t>(r) < wide.size(); ++r) {
    check.expect(wide[r] == gathered_value(r),
                 "all_gather of 64-bit values at " + std::to_string(r));
  }

  std::vector<float> floats(kElements);
  for (std::size_t i = 0; i < kElements; ++i) floats[i] = float_value(rank, i);
  group.all_reduce_sum(floats.data(), floats.size());
  int float_mismatches = 0;
  for (std::size_t i = 0; i < kElements; ++i) {
    float expected = 0.0F;
    for (int r = 0; r < size; ++r) expected += float_value(r, i);
    float_mismatches += floats[i] != expected;
  }
  check.expect(float_mismatches == 0,
               std::to_string(float_mismatches) + " wrong sums in all_reduce_sum(float)");

  // In the job's one order, whatever MPI's own would be (N ranks train as one process of N).
  for (std::size_t i = 0; i < kElements; ++i) floats[i] = spread_value(rank, i);
  group.all_reduce_sum(floats.data(), floats.size());
  int order_mismatches = 0;
  for (std::size_t i = 0; i < kElements; ++i)
    order_mismatches += floats[i] != tree_of_ranks(0, size, i);
  check.expect(order_mismatches == 0, std::to_string(order_mismatches) +
                                          " sums in all_reduce_sum(float) not in the tree order");

  std::vector<double> doubles(kElements);
  for (std::size_t i = 0; i < kElements; ++i) doubles[i] = double_value(rank, i);
  group.all_reduce_sum(doubles.data(), doubles.size());
  int double_mismatches = 0;
  for (std::size_t i = 0; i < kElements; ++i) {
    double expected = 0.0;
    for (int r = 0; r < size; ++r) expected += double_value(r, i);
    double_mismatches += doubles[i] != expected;
  }
  check.expect(double_mismatches == 0,
               std::to_string(double_mismatches) + " wrong sums in all_reduce_sum(double)");

  // The last rank is root, so a broadcast that ignored `root` and sent rank 0's bytes fails.
  const int root = size - 1;
  std::vector<unsigned char> bytes(kBroadcastBytes, 0);
  if (rank == root) {
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = broadcast_byte(root, i);
  }
  group.broadcast(bytes.data(), bytes.size(), root);
  int byte_mismatches = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    byte_mismatches += bytes[i] != broadcast_byte(root, i);
  }
  check.expect(byte_mismatches == 0,
               std::to_string(byte_mismatches) + " wrong bytes after broadcast");

  // Parts of different lengths (rank r sends r x 1000 + 3 bytes), gathered at the last rank.
  const std::vector<std::string> parts = group.gather(gather_part(rank), root);
  if (rank == root) {
    check.expect(parts.size() == static_cast<std::size_t>(size), "gather: wrong part count");
    for (int r = 0; r < size && static_cast<std::size_t>(r) < parts.size(); ++r)
      check.expect(parts[static_cast<std::size_t>(r)] == gather_part(r),
                   "gather: part of rank " + std::to_string(r) + " differs");
  } else {
    check.expect(parts.empty(), "gather: a rank that is not root received parts");
  }

  group.barrier();

  // Every rank learns whether any rank failed, so all of them exit with the same status.
  double failures = check.failures();
  group.all_reduce_sum(&failures, 1);
  if (failures != 0.0) return EXIT_FAILURE;
  if (group.is_root()) std::printf("mpi smoke: ok (%s)\n", group.name().c_str());
  return EXIT_SUCCESS;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    auto group = dl::make_process_group(&argc, &argv);
    if (argc < 2) {
      std::fprintf(stderr, "usage: mpi_smoke <expected ranks> [--abort <rank>]\n");
      return EXIT_FAILURE;
    }
    const int expected_size = std::atoi(argv[1]);
    if (argc == 4 && std::strcmp(argv[2], "--abort") == 0) {
      if (group->rank() == std::atoi(argv[3])) {
        std::printf("mpi smoke: rank %d aborts the job\n", group->rank());
        group->abort_job(kAbortExitCode);
      }
      group->barrier();  // never completes: the aborting rank does not arrive
      std::fprintf(stderr, "mpi smoke: rank %d passed a barrier an aborted rank never reached\n",
                   group->rank());
      return EXIT_FAILURE;
    }
    return run_checks(*group, expected_size);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "mpi smoke: %s\n", error.what());
    return EXIT_FAILURE;
  }
}
