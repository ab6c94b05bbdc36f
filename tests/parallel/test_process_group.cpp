// The single-process group, the launcher detection that decides between it and MPI, and the local
// rank the launchers state.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <future>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/node_identity.hpp"
#include "parallel/collective_watchdog.hpp"
#include "parallel/launcher_env.hpp"
#include "parallel/process_group.hpp"

namespace {

dl::EnvLookup fake_env(const std::map<std::string, std::string>& variables) {
  return [variables](const char* name) -> const char* {
    const auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
}

}  // namespace

TEST_CASE("single process group: gather returns this process's bytes") {
  const auto group = dl::make_single_process_group();
  const std::vector<std::string> parts = group->gather(std::string("ab\0c", 4), 0);
  REQUIRE(parts.size() == 1);
  CHECK(parts[0] == std::string("ab\0c", 4));
}

TEST_CASE("node identity: host name and boot id, or NCCL_HOSTID") {
  char host[256] = {};
  REQUIRE(gethostname(host, sizeof(host) - 1) == 0);
  const std::string boot_file = "test_node_identity_boot_id";
  std::ofstream(boot_file) << "3f1c0c8e-5d0a-4f5e-9c1e-0123456789ab\n";
  // Two containers named alike on two machines: other boot ids, other identities.
  const std::string here = dl::node_identity(fake_env({}), boot_file);
  CHECK(here == std::string(host) + " boot 3f1c0c8e-5d0a-4f5e-9c1e-0123456789ab");
  std::ofstream(boot_file) << "9a8b7c6d-0000-4000-8000-000000000000\n";
  CHECK(dl::node_identity(fake_env({}), boot_file) != here);
  CHECK(dl::node_identity(fake_env({{"NCCL_HOSTID", "rack4-node7"}}), boot_file) ==
        "NCCL_HOSTID rack4-node7");
  // Without a boot id (not Linux): the host name alone.
  CHECK(dl::node_identity(fake_env({}), "no_such_boot_id_file") == host);
  std::remove(boot_file.c_str());
}

TEST_CASE("collective watchdog: a call that outlasts the timeout is reported once, by name") {
  using std::chrono::milliseconds;
  std::promise<std::string> expired;
  auto reported = expired.get_future();
  dl::CollectiveWatchdog watchdog(
      [&expired](const std::string& call, milliseconds) { expired.set_value(call); });
  watchdog.set_timeout(milliseconds(200));
  // Calls shorter than the timeout, one after another for longer than it, are not reported.
  for (int i = 0; i < 5; ++i) {
    const auto watch = watchdog.watch("MPI_Allreduce");
    std::this_thread::sleep_for(milliseconds(60));
  }
  CHECK(reported.wait_for(milliseconds(0)) == std::future_status::timeout);
  const auto watch = watchdog.watch("MPI_Bcast");
  REQUIRE(reported.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(reported.get() == "MPI_Bcast");
}

TEST_CASE("collective watchdog: without a timeout nothing is reported") {
  bool fired = false;
  dl::CollectiveWatchdog watchdog([&fired](const std::string&, std::chrono::milliseconds) {
    fired = true;
  });
  watchdog.set_timeout(std::chrono::milliseconds(0));
  {
    const auto watch = watchdog.watch("MPI_Barrier");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK_FALSE(fired);
}

TEST_CASE("single process group: rank 0 of 1, collectives leave buffers as they are") {
  const auto group = dl::make_single_process_group();
  CHECK(group->rank() == 0);
  CHECK(group->size() == 1);
  CHECK(group->is_root());
  CHECK(group->name() == "single process");

  std::vector<float> floats = {1.5F, -2.0F, 3.25F};
  group->all_reduce_sum(floats.data(), floats.size());
  CHECK(floats == std::vector<float>{1.5F, -2.0F, 3.25F});

  std::vector<double> doubles = {0.1, 1e300, -7.0};
  group->all_reduce_sum(doubles.data(), doubles.size());
  CHECK(doubles == std::vector<double>{0.1, 1e300, -7.0});

  std::vector<unsigned char> bytes = {9, 8, 7};
  group->broadcast(bytes.data(), bytes.size(), 0);
  CHECK(bytes == std::vector<unsigned char>{9, 8, 7});

  constexpr std::uint64_t kBeyond32Bits = (std::uint64_t{1} << 40) + 3;
  CHECK(group->all_gather(kBeyond32Bits) == std::vector<std::uint64_t>{kBeyond32Bits});
  group->barrier();
}

TEST_CASE("single process group: abort_job flushes buffered output and exits with the code") {
  constexpr int kExitCode = 7;
  int pipe_ends[2];
  REQUIRE(pipe(pipe_ends) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(pipe_ends[0]);
    dup2(pipe_ends[1], STDOUT_FILENO);
    // stdout is now a pipe, so stdio buffers this line fully until something flushes it.
    std::printf("before abort");
    dl::make_single_process_group()->abort_job(kExitCode);
  }
  close(pipe_ends[1]);
  std::string output;
  char chunk[64];
  ssize_t got = 0;
  while ((got = read(pipe_ends[0], chunk, sizeof chunk)) > 0) output.append(chunk, got);
  close(pipe_ends[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == kExitCode);
  CHECK(output == "before abort");
}

TEST_CASE("make_process_group without a launcher is the single process") {
  if (dl::detect_launcher()) {
    WARN("started by a launcher: the plain-start case is not tested in this run");
    return;
  }
  int argc = 0;
  char** argv = nullptr;
  const auto group = dl::make_process_group(&argc, &argv);
  CHECK(group->size() == 1);
  CHECK(group->rank() == 0);
  CHECK(group->name() == "single process");
}

TEST_CASE("detect_launcher: a plain start, and a Slurm batch script, have no launcher") {
  CHECK_FALSE(dl::detect_launcher(fake_env({})));
  CHECK_FALSE(dl::detect_launcher(fake_env({{"HOME", "/root"}, {"PATH", "/usr/bin"}})));
  // The batch script runs with SLURM_PROCID=0 but outside any srun step.
  CHECK_FALSE(dl::detect_launcher(
      fake_env({{"SLURM_JOB_ID", "42"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "16"}})));
}

TEST_CASE("detect_launcher: each launcher, and how many processes it started") {
  SECTION("Open MPI's mpirun") {
    const auto launcher = dl::detect_launcher(fake_env(
        {{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"}, {"PMIX_RANK", "2"}}));
    REQUIRE(launcher);
    CHECK(launcher->processes == 4);
    CHECK(launcher->name.find("mpirun") != std::string::npos);
  }
  SECTION("srun without an MPI plugin") {
    const auto launcher =
        dl::detect_launcher(fake_env({{"SLURM_PROCID", "5"}, {"SLURM_STEP_NUM_TASKS", "16"}}));
    REQUIRE(launcher);
    CHECK(launcher->processes == 16);
    CHECK(launcher->name.find("srun") != std::string::npos);
  }
  SECTION("srun --mpi=pmix") {
    const auto launcher = dl::detect_launcher(
        fake_env({{"SLURM_PROCID", "1"}, {"SLURM_STEP_NUM_TASKS", "8"}, {"PMIX_RANK", "1"}}));
    REQUIRE(launcher);
    CHECK(launcher->processes == 8);
    CHECK(launcher->name.find("srun") != std::string::npos);
  }
  SECTION("srun --mpi=pmi2") {
    const auto launcher = dl::detect_launcher(fake_env({{"SLURM_PROCID", "0"},
                                                        {"SLURM_STEP_NUM_TASKS", "2"},
                                                        {"PMI_SIZE", "2"},
                                                        {"PMI_RANK", "0"}}));
    REQUIRE(launcher);
    CHECK(launcher->processes == 2);
  }
  SECTION("MPICH or Intel MPI mpiexec") {
    const auto launcher = dl::detect_launcher(fake_env({{"PMI_RANK", "3"}, {"PMI_SIZE", "6"}}));
    REQUIRE(launcher);
    CHECK(launcher->processes == 6);
  }
  SECTION("a PMIx launcher that does not say how many") {
    const auto launcher = dl::detect_launcher(fake_env({{"PMIX_RANK", "0"}}));
    REQUIRE(launcher);
    CHECK(launcher->processes == 0);
  }
  SECTION("a count that is not a positive number is unknown, not an error") {
    for (const char* odd : {"", "two", "-3", "0", "4x", "99999999999999999999"}) {
      const auto launcher = dl::detect_launcher(fake_env({{"OMPI_COMM_WORLD_SIZE", odd}}));
      REQUIRE(launcher);
      CHECK(launcher->processes == 0);
    }
  }
}

TEST_CASE("local rank from the launcher's variables") {
  const auto ompi = dl::local_rank_from_launcher(
      fake_env({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}}));
  REQUIRE(ompi);
  CHECK(ompi->rank == 3);
  CHECK(ompi->size == 8);
  CHECK(ompi->source == "OMPI_COMM_WORLD_LOCAL_RANK");

  // Node 3 of a step with 2 tasks on each of 3 nodes, then 1: this node runs 1 task.
  const auto slurm =
      dl::local_rank_from_launcher(fake_env({{"SLURM_LOCALID", "0"},
                                             {"SLURM_STEP_NUM_TASKS", "7"},
                                             {"SLURM_NODEID", "3"},
                                             {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}}));
  REQUIRE(slurm);
  CHECK(slurm->size == 1);
  CHECK(slurm->source == "SLURM_LOCALID");

  const auto mpich =
      dl::local_rank_from_launcher(fake_env({{"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}}));
  REQUIRE(mpich);
  CHECK(mpich->rank == 1);

  // The batch script (no step), a rank past the size, or a missing size: not stated.
  CHECK_FALSE(dl::local_rank_from_launcher(fake_env({{"SLURM_LOCALID", "0"}})));
  CHECK_FALSE(dl::local_rank_from_launcher(
      fake_env({{"OMPI_COMM_WORLD_LOCAL_RANK", "8"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}})));
  CHECK_FALSE(dl::local_rank_from_launcher(fake_env({{"MPI_LOCALRANKID", "0"}})));
  CHECK_FALSE(dl::local_rank_from_launcher(fake_env({})));
}

TEST_CASE("Slurm's compressed tasks per node") {
  CHECK(dl::slurm_tasks_on_node("8", 0) == 8);
  CHECK(dl::slurm_tasks_on_node("8(x2)", 1) == 8);
  CHECK(dl::slurm_tasks_on_node("8(x2)", 2) == 0);
  CHECK(dl::slurm_tasks_on_node("2(x3),1", 2) == 2);
  CHECK(dl::slurm_tasks_on_node("2(x3),1", 3) == 1);
  CHECK(dl::slurm_tasks_on_node("4,2,1", 1) == 2);
  for (const char* odd : {"", "x", "2(3)", "2(x)", "2(x3", "0", "-1,2"}) {
    CHECK(dl::slurm_tasks_on_node(odd, 0) == 0);
  }
}
