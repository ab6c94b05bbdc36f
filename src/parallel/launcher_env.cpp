#include "parallel/launcher_env.hpp"

#include <cstdlib>

namespace dl {
namespace {

constexpr long kMaxCount = 1L << 30;
constexpr int kDecimal = 10;

// A whole number from the environment within [minimum, kMaxCount]; -1 when the value is missing
// or not such a number (the caller then treats it as unknown rather than failing on a launcher's
// odd value).
long whole_number(const char* value, long minimum) {
  if (value == nullptr) return -1;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, kDecimal);
  const bool whole = end != value && *end == '\0';
  if (!whole || parsed < minimum || parsed > kMaxCount) return -1;
  return parsed;
}

// A count from the environment; 0 when the value is missing or not a positive number.
int positive_count(const char* value) {
  const long parsed = whole_number(value, 1);
  return parsed < 0 ? 0 : static_cast<int>(parsed);
}

// rank and size from two variables, when both are numbers and rank < size.
std::optional<LocalRank> rank_and_size(const char* rank_text, long size, const char* source) {
  const long rank = whole_number(rank_text, 0);
  if (rank < 0 || size < 1 || rank >= size) return std::nullopt;
  return LocalRank{static_cast<int>(rank), static_cast<int>(size), source};
}

}  // namespace

std::optional<Launcher> detect_launcher(const EnvLookup& getenv) {
  // Open MPI's mpirun (and the Kubeflow MPI Operator's launcher, which runs it).
  if (getenv("OMPI_COMM_WORLD_SIZE") != nullptr) {
    return Launcher{"mpirun (Open MPI)", positive_count(getenv("OMPI_COMM_WORLD_SIZE"))};
  }
  // srun sets SLURM_STEP_NUM_TASKS for the processes of a job step. SLURM_PROCID alone is not
  // enough: the batch script itself runs with SLURM_PROCID=0 and no step.
  const bool slurm_step =
      getenv("SLURM_PROCID") != nullptr && getenv("SLURM_STEP_NUM_TASKS") != nullptr;
  if (getenv("PMIX_RANK") != nullptr) {
    return Launcher{slurm_step ? "srun (PMIx)" : "a PMIx launcher",
                    positive_count(getenv(slurm_step ? "SLURM_STEP_NUM_TASKS" : "PMIX_SIZE"))};
  }
  // MPICH's and Intel MPI's mpiexec (Hydra), and srun --mpi=pmi2.
  if (getenv("PMI_RANK") != nullptr || getenv("PMI_SIZE") != nullptr) {
    return Launcher{slurm_step ? "srun (PMI)" : "mpiexec (PMI)",
                    positive_count(getenv("PMI_SIZE"))};
  }
  if (slurm_step) return Launcher{"srun", positive_count(getenv("SLURM_STEP_NUM_TASKS"))};
  return std::nullopt;
}

std::optional<Launcher> detect_launcher() {
  return detect_launcher([](const char* variable) { return std::getenv(variable); });
}

int slurm_tasks_on_node(const std::string& tasks_per_node, int node) {
  // Entries are "N" or "N(xR)" (N tasks on each of R nodes), separated by commas.
  std::size_t at = 0;
  long first_node = 0;
  while (at < tasks_per_node.size() && node >= 0) {
    const char* begin = tasks_per_node.c_str() + at;
    char* end = nullptr;
    const long tasks = std::strtol(begin, &end, kDecimal);
    if (end == begin || tasks < 1 || tasks > kMaxCount) return 0;
    long repeat = 1;
    if (*end == '(') {
      if (end[1] != 'x') return 0;
      char* after = nullptr;
      repeat = std::strtol(end + 2, &after, kDecimal);
      if (after == end + 2 || *after != ')' || repeat < 1 || repeat > kMaxCount) return 0;
      end = after + 1;
    }
    if (node < first_node + repeat) return static_cast<int>(tasks);
    first_node += repeat;
    if (*end == '\0') return 0;
    if (*end != ',') return 0;
    at = static_cast<std::size_t>(end - tasks_per_node.c_str()) + 1;
  }
  return 0;
}

std::optional<LocalRank> local_rank_from_launcher(const EnvLookup& getenv) {
  if (getenv("OMPI_COMM_WORLD_LOCAL_RANK") != nullptr) {
    return rank_and_size(getenv("OMPI_COMM_WORLD_LOCAL_RANK"),
                         whole_number(getenv("OMPI_COMM_WORLD_LOCAL_SIZE"), 1),
                         "OMPI_COMM_WORLD_LOCAL_RANK");
  }
  if (getenv("SLURM_LOCALID") != nullptr && getenv("SLURM_STEP_NUM_TASKS") != nullptr) {
    const char* per_node = getenv("SLURM_STEP_TASKS_PER_NODE");
    const long node = whole_number(getenv("SLURM_NODEID"), 0);
    const long size = per_node == nullptr || node < 0
                          ? -1
                          : slurm_tasks_on_node(per_node, static_cast<int>(node));
    return rank_and_size(getenv("SLURM_LOCALID"), size, "SLURM_LOCALID");
  }
  if (getenv("MPI_LOCALRANKID") != nullptr) {
    return rank_and_size(getenv("MPI_LOCALRANKID"), whole_number(getenv("MPI_LOCALNRANKS"), 1),
                         "MPI_LOCALRANKID");
  }
  return std::nullopt;
}

}  // namespace dl
