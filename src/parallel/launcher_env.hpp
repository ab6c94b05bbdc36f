// Which launcher (mpirun, srun, mpiexec) started this process, read from the environment
// variables each one sets for its processes. Read before MPI_Init so that a plain start
// (`dl-train --config ...`) never touches MPI.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace dl {

struct Launcher {
  std::string name;   // for messages: "mpirun (Open MPI)", "srun", ...
  int processes = 0;  // how many processes it started; 0 when its variables do not say
};

// Reads one environment variable: nullptr when unset. Tests pass a fake environment.
using EnvLookup = std::function<const char*(const char*)>;

// The launcher that started this process, or nullopt when none did.
std::optional<Launcher> detect_launcher(const EnvLookup& getenv);
// The same, from this process's real environment.
std::optional<Launcher> detect_launcher();

// This process's place among the processes of its job on the same machine. GPUs and cores are
// shared out by it.
struct LocalRank {
  int rank = 0;  // 0 .. size - 1
  int size = 1;
  std::string source = "a single process";  // where rank and size came from, for the start plan
};

// The local rank as the launcher states it: Open MPI (OMPI_COMM_WORLD_LOCAL_RANK and
// _LOCAL_SIZE), srun (SLURM_LOCALID, with this node's entry of SLURM_STEP_TASKS_PER_NODE picked
// by SLURM_NODEID), MPICH and Intel MPI (MPI_LOCALRANKID, MPI_LOCALNRANKS). nullopt when none
// states both numbers consistently; the MPI process group then asks MPI_Comm_split_type.
std::optional<LocalRank> local_rank_from_launcher(const EnvLookup& getenv);

// Slurm's compressed per-node task counts ("2(x3),1" is 2,2,2,1): the count of node `node`, or 0
// when the text does not say.
int slurm_tasks_on_node(const std::string& tasks_per_node, int node);

}  // namespace dl
