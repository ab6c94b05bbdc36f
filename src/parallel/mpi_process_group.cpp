// The process group over MPI_COMM_WORLD, for the build with MPI. MPI is initialized only when a
// launcher started this process; a plain start gets the single-process group and never loads
// MPI's runtime.
//
// One thread per process calls MPI (the process's worker 0), but not always the thread that
// called MPI_Init, hence MPI_THREAD_SERIALIZED. Errors return codes (MPI_ERRORS_RETURN) so a
// failing call becomes a dl::Error naming the call and the rank. MPI collectives have no
// timeout: a rank that dies makes the launcher end the job, and a rank that fails with an error
// must call abort_job() so the others are not left waiting (docs/DISTRIBUTED.md).

// Only MPI's C interface is used; this keeps mpi.h from pulling in the deprecated C++ bindings
// (Open MPI, MPICH), whose headers do not compile cleanly under our warnings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "parallel/collective_watchdog.hpp"
#include "parallel/launcher_env.hpp"
#include "parallel/process_group.hpp"
#include "parallel/sum_order.hpp"

namespace dl {
namespace {

// MPI counts are int; larger buffers go in chunks of this many elements.
constexpr std::size_t kMaxMpiCount = static_cast<std::size_t>(std::numeric_limits<int>::max());
constexpr int kRequiredThreadLevel = MPI_THREAD_SERIALIZED;

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return fmt::format("error {}", code);
  return std::string(text, static_cast<std::size_t>(length));
}

// "Open MPI v4.1.4, package: ..., ident: ..." -> "Open MPI v4.1.4": the library's first line up
// to its first comma, with runs of whitespace made single spaces.
std::string mpi_library_name() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "unknown library";
  const std::string full(text, static_cast<std::size_t>(length));
  const std::string first = full.substr(0, full.find_first_of("\n,"));
  std::string name;
  for (const char c : first) {
    const bool space = c == ' ' || c == '\t' || c == '\r';
    if (space && (name.empty() || name.back() == ' ')) continue;
    name.push_back(space ? ' ' : c);
  }
  while (!name.empty() && name.back() == ' ') name.pop_back();
  return name.empty() ? "unknown library" : name;
}

// Finalizes MPI when the process exits normally (static destruction), if this process
// initialized it. abort_job() and std::_Exit skip it, as they must.
class MpiRuntime {
 public:
  static void init(int* argc, char*** argv) { static MpiRuntime runtime(argc, argv); }

  ~MpiRuntime() {
    if (!owns_mpi_) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

 private:
  MpiRuntime(int* argc, char*** argv) {
    int already = 0;
    MPI_Initialized(&already);
    if (already) return;
    int provided = MPI_THREAD_SINGLE;
    const int code = MPI_Init_thread(argc, argv, kRequiredThreadLevel, &provided);
    if (code != MPI_SUCCESS) {
      throw ConfigError(
          fmt::format("MPI_Init_thread: failed ({}); check that the launcher belongs to "
                      "the MPI dl-train was built with ({})",
                      mpi_error_text(code), mpi_library_name()));
    }
    if (provided < kRequiredThreadLevel) {
      MPI_Finalize();
      throw Error(ExitCode::kFailure,
                  fmt::format("MPI_Init_thread: {} gives thread level {}, dl-train needs "
                              "MPI_THREAD_SERIALIZED ({}); use an MPI built with thread "
                              "support",
                              mpi_library_name(), provided, kRequiredThreadLevel));
    }
    owns_mpi_ = true;
  }

  bool owns_mpi_ = false;
};

class MpiProcessGroup final : public ProcessGroup {
 public:
  explicit MpiProcessGroup(const Launcher& launcher)
      : watchdog_([this](const std::string& call, std::chrono::milliseconds waited) {
          end_stuck_job(call, waited);
        }) {
    check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    // A launcher of another MPI starts N processes that each initialize as a lone rank 0, and
    // would each train alone into the same run directory.
    if (launcher.processes > 0 && launcher.processes != size_) {
      throw ConfigError(
          fmt::format("MPI rank {} of {}: {} started {} processes, but {} sees {}; run "
                      "the launcher of the MPI dl-train was built with, or rebuild "
                      "dl-train against the launcher's MPI",
                      rank_, size_, launcher.name, launcher.processes, mpi_library_name(), size_));
    }
    name_ = fmt::format("MPI ({}), {} rank{}", mpi_library_name(), size_, size_ == 1 ? "" : "s");
    local_rank_ = find_local_rank();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return name_; }
  LocalRank local_rank() const override { return local_rank_; }

  void set_timeout(std::int64_t seconds) override {
    watchdog_.set_timeout(std::chrono::seconds(seconds));
  }

  void all_reduce_sum(float* data, std::size_t n) override {
    all_reduce_in_order(data, n, MPI_FLOAT);
  }
  void all_reduce_sum(double* data, std::size_t n) override {
    all_reduce_in_order(data, n, MPI_DOUBLE);
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    check_root(root, "broadcast");
    const auto watch = watchdog_.watch("MPI_Bcast");
    auto* bytes_at = static_cast<unsigned char*>(data);
    for (std::size_t done = 0; done < bytes;) {
      const std::size_t count = std::min(kMaxMpiCount, bytes - done);
      check(MPI_Bcast(bytes_at + done, static_cast<int>(count), MPI_BYTE, root, MPI_COMM_WORLD),
            "MPI_Bcast");
      done += count;
    }
  }

  std::vector<std::uint64_t> all_gather(std::uint64_t value) override {
    std::vector<std::uint64_t> values(static_cast<std::size_t>(size_));
    const auto watch = watchdog_.watch("MPI_Allgather");
    check(MPI_Allgather(&value, 1, MPI_UINT64_T, values.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD),
          "MPI_Allgather");
    return values;
  }

  // Point to point in chunks, so that a rank's part may exceed MPI's int count (a large model's
  // updater states); root receives the ranks in order.
  std::vector<std::string> gather(const std::string& bytes, int root) override {
    check_root(root, "gather");
    const auto watch = watchdog_.watch(rank_ == root ? "MPI_Recv (gather)" : "MPI_Send (gather)");
    constexpr int kSizeTag = 1;
    constexpr int kBytesTag = 2;
    if (rank_ != root) {
      std::uint64_t size = bytes.size();
      check(MPI_Send(&size, 1, MPI_UINT64_T, root, kSizeTag, MPI_COMM_WORLD), "MPI_Send");
      for (std::size_t done = 0; done < bytes.size();) {
        const std::size_t count = std::min(kMaxMpiCount, bytes.size() - done);
        check(MPI_Send(bytes.data() + done, static_cast<int>(count), MPI_BYTE, root, kBytesTag,
                       MPI_COMM_WORLD),
              "MPI_Send");
        done += count;
      }
      return {};
    }
    std::vector<std::string> parts(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      std::string& part = parts[static_cast<std::size_t>(r)];
      if (r == root) {
        part = bytes;
        continue;
      }
      std::uint64_t size = 0;
      check(MPI_Recv(&size, 1, MPI_UINT64_T, r, kSizeTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Recv");
      part.resize(size);
      for (std::size_t done = 0; done < part.size();) {
        const std::size_t count = std::min(kMaxMpiCount, part.size() - done);
        check(MPI_Recv(part.data() + done, static_cast<int>(count), MPI_BYTE, r, kBytesTag,
                       MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv");
        done += count;
      }
    }
    return parts;
  }

  void barrier() override {
    const auto watch = watchdog_.watch("MPI_Barrier");
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  }

  [[noreturn]] void abort_job(int exit_code) override {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; this is for an MPI that does
  }

 private:
  // Sums in the job's one order over ranks (sum_order.hpp), so that N ranks add what one process
  // of N workers adds. Two ranks' a + b is b + a, so MPI's sum serves them. With more, MPI adds in
  // an order of its own: each rank then gathers every rank's part of its own slice, adds the
  // parts in the tree order and hands its sums to all, moving what a ring all-reduce moves.
  template <typename T>
  void all_reduce_in_order(T* data, std::size_t n, MPI_Datatype type) {
    if (size_ <= 2) {
      all_reduce_in_place(data, n, type);
      return;
    }
    // Half of MPI's int count, so that a rank's parts at their offsets stay within it too.
    constexpr std::size_t kWindow = kMaxMpiCount / 2;
    for (std::size_t done = 0; done < n; done += std::min(kWindow, n - done))
      sum_slices_in_order(data + done, std::min(kWindow, n - done), type);
  }

  template <typename T>
  void sum_slices_in_order(T* data, std::size_t n, MPI_Datatype type) {
    const auto ranks = static_cast<std::size_t>(size_);
    std::vector<int> counts(ranks), offsets(ranks);
    for (std::size_t r = 0; r < ranks; ++r) {
      offsets[r] = static_cast<int>(n * r / ranks);
      counts[r] = static_cast<int>(n * (r + 1) / ranks) - offsets[r];
    }
    const int mine = counts[static_cast<std::size_t>(rank_)];
    std::vector<T> parts(ranks * static_cast<std::size_t>(mine));
    std::vector<int> part_counts(ranks, mine), part_offsets(ranks);
    std::vector<T*> part_of(ranks);
    for (std::size_t r = 0; r < ranks; ++r) {
      part_offsets[r] = static_cast<int>(r) * mine;
      part_of[r] = parts.data() + part_offsets[r];
    }
    {
      const auto watch = watchdog_.watch("MPI_Alltoallv");
      check(MPI_Alltoallv(data, counts.data(), offsets.data(), type, parts.data(),
                          part_counts.data(), part_offsets.data(), type, MPI_COMM_WORLD),
            "MPI_Alltoallv");
    }
    add_in_tree_order(part_of.data(), size_, 0, static_cast<std::size_t>(mine));
    std::copy(parts.begin(), parts.begin() + mine, data + offsets[static_cast<std::size_t>(rank_)]);
    const auto watch = watchdog_.watch("MPI_Allgatherv");
    check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts.data(), offsets.data(),
                         type, MPI_COMM_WORLD),
          "MPI_Allgatherv");
  }

  template <typename T>
  void all_reduce_in_place(T* data, std::size_t n, MPI_Datatype type) {
    const auto watch = watchdog_.watch("MPI_Allreduce");
    for (std::size_t done = 0; done < n;) {
      const std::size_t count = std::min(kMaxMpiCount, n - done);
      check(MPI_Allreduce(MPI_IN_PLACE, data + done, static_cast<int>(count), type, MPI_SUM,
                          MPI_COMM_WORLD),
            "MPI_Allreduce");
      done += count;
    }
  }

  // The launcher's word when it gives one, else the ranks that share this machine's memory
  // (MPI_Comm_split_type). The split is collective, so every rank makes it either way.
  LocalRank find_local_rank() {
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    LocalRank split{0, 1, "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)"};
    check(MPI_Comm_rank(node, &split.rank), "MPI_Comm_rank");
    check(MPI_Comm_size(node, &split.size), "MPI_Comm_size");
    check(MPI_Comm_free(&node), "MPI_Comm_free");
    const std::optional<LocalRank> stated =
        local_rank_from_launcher([](const char* variable) { return std::getenv(variable); });
    return stated.value_or(split);
  }

  // The watchdog's thread: it may call no MPI function (the waiting thread is inside one), so it
  // ends this process, and the launcher then ends the other ranks.
  [[noreturn]] void end_stuck_job(const std::string& call, std::chrono::milliseconds waited) {
    std::cerr << fmt::format(
                     "dl-train: rank {}: error: {} has waited {} s (parallel.timeout) for the "
                     "other ranks of the job: one of them is stopped, hangs (a stuck file "
                     "system, a lost link) or died unnoticed; ending the job. Raise "
                     "parallel.timeout if a rank works longer than that between steps\n",
                     rank_, call, std::chrono::duration_cast<std::chrono::seconds>(waited).count())
              << std::flush;
    std::_Exit(static_cast<int>(ExitCode::kFailure));
  }

  void check_root(int root, const char* what) const {
    if (root < 0 || root >= size_) {
      throw InternalError(
          fmt::format("MPI rank {}: {} with root {} of {} ranks", rank_, what, root, size_));
    }
  }

  void check(int code, const char* call) const {
    if (code == MPI_SUCCESS) return;
    throw Error(ExitCode::kFailure,
                fmt::format("MPI rank {} of {}: {} failed: {}; another rank has probably failed "
                            "or lost its connection: look for its first error in the job's output",
                            rank_, size_, call, mpi_error_text(code)));
  }

  CollectiveWatchdog watchdog_;
  int rank_ = -1;
  int size_ = 0;
  std::string name_;
  LocalRank local_rank_;
};

}  // namespace

std::unique_ptr<ProcessGroup> make_process_group(int* argc, char*** argv) {
  const std::optional<Launcher> launcher = detect_launcher();
  if (!launcher) return make_single_process_group();
  MpiRuntime::init(argc, argv);
  return std::make_unique<MpiProcessGroup>(*launcher);
}

}  // namespace dl
