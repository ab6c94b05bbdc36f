// Which GPUs each process of a machine takes (devices_for_process), for 1-8 processes per
// machine and 1-8 GPUs, with CUDA_VISIBLE_DEVICES unset, set alike for every process, and set
// by the launcher to each process's own GPUs (srun --gpus-per-task). The machine is simulated:
// each process's view and its neighbours come from share_of, as share_of_visible_gpus finds them.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend_selection.hpp"
#include "core/error.hpp"
#include "parallel/node_share.hpp"

namespace {

constexpr int kMostProcesses = 8;
constexpr int kMostGpus = 8;
constexpr int kMachineGpus = 8;  // physical GPUs 0-7; a CUDA_VISIBLE_DEVICES picks among them

enum class View { kUnset, kSameList, kOwnList };

struct ProcessView {
  std::string cuda_visible_devices;  // "" when unset
  std::vector<int> physical;         // what the CUDA runtime numbers 0, 1, ...
};

// What process p of `processes` sees of `gpus` GPUs in each mode. kSameList shows the machine's
// last `gpus` GPUs in reverse order, so physical ids differ from the ordinals; kOwnList gives each
// process gpus / processes GPUs of its own (none when there are too few: srun refuses the step).
ProcessView view_of(View mode, int processes, int gpus, int p) {
  ProcessView v;
  if (mode == View::kUnset) {
    for (int g = 0; g < gpus; ++g) v.physical.push_back(g);
    return v;
  }
  const int each = mode == View::kSameList ? gpus : gpus / processes;
  const int first = mode == View::kSameList ? 0 : p * each;
  for (int g = first; g < first + each; ++g) {
    const int physical = mode == View::kSameList ? kMachineGpus - 1 - g : g;
    v.physical.push_back(physical);
    v.cuda_visible_devices += (g == first ? "" : ",") + std::to_string(physical);
  }
  return v;
}

dl::Config config(int workers, bool allow_multi_gpu) {
  dl::Config c;
  c.sourcePath = "job.yaml";
  c.backend = dl::BackendKind::kCuda;
  c.parallel.workers = workers;
  c.cuda.allowMultiGPU = allow_multi_gpu;
  return c;
}

// The physical GPU of each worker of each process, or an empty result when the machine is refused
// (error set to the message).
std::vector<std::vector<int>> place(View mode, int processes, int gpus, int workers,
                                    bool allow_multi_gpu, std::string* error) {
  std::vector<ProcessView> views;
  std::vector<std::uint64_t> keys, local_ranks;
  for (int p = 0; p < processes; ++p) {
    views.push_back(view_of(mode, processes, gpus, p));
    keys.push_back(std::hash<std::string>{}(
        mode == View::kUnset ? std::string("\n") : views.back().cuda_visible_devices));
    local_ranks.push_back(static_cast<std::uint64_t>(p));
  }
  std::vector<std::vector<int>> placed;
  for (int p = 0; p < processes; ++p) {
    const dl::NodeShare share = dl::share_of(keys, local_ranks, p);
    const int visible = static_cast<int>(views[p].physical.size());
    try {
      const std::vector<int> devices = dl::gpu::devices_for_process(
          config(workers, allow_multi_gpu), visible, {share.count, share.index}, "no GPU");
      std::vector<int> per_worker;
      for (int w = 0; w < workers; ++w) {
        per_worker.push_back(views[p].physical.at(devices.at(w % devices.size())));
      }
      placed.push_back(per_worker);
    } catch (const dl::ConfigError& e) {
      *error = e.what();
      return {};
    }
  }
  return placed;
}

std::string cell(const std::vector<std::vector<int>>& placed) {
  if (placed.empty()) return "-";
  std::string text;
  for (std::size_t p = 0; p < placed.size(); ++p) {
    std::set<int> gpus(placed[p].begin(), placed[p].end());
    if (p > 0) text += "|";
    for (const int g : gpus) text += std::to_string(g);
  }
  return text;
}

}  // namespace

TEST_CASE("GPU per local rank: no two processes share a GPU, each gets its equal part") {
  for (const View mode : {View::kUnset, View::kSameList, View::kOwnList}) {
    for (int processes = 1; processes <= kMostProcesses; ++processes) {
      for (int gpus = 1; gpus <= kMostGpus; ++gpus) {
        if (mode == View::kOwnList && gpus < processes) continue;  // srun refuses such a step
        for (const bool multi : {true, false}) {
          for (const int workers : {1, 2, 3}) {
            CAPTURE(static_cast<int>(mode), processes, gpus, multi, workers);
            std::string error;
            const auto placed = place(mode, processes, gpus, workers, multi, &error);
            const bool own = mode == View::kOwnList;
            if (!own && processes > gpus) {
              // Too few GPUs for the processes that see them: one clear config error.
              CHECK(placed.empty());
              CHECK_THAT(error, Catch::Matchers::Contains("processes cannot share a GPU"));
              continue;
            }
            REQUIRE(placed.size() == static_cast<std::size_t>(processes));
            std::set<int> taken;
            for (const auto& per_worker : placed) {
              const std::set<int> mine(per_worker.begin(), per_worker.end());
              for (const int g : mine) CHECK(taken.insert(g).second);  // no GPU twice
              const int part = own ? gpus / processes : gpus / processes;
              const int expected = multi ? std::min(part, workers) : 1;
              CHECK(static_cast<int>(mine.size()) == expected);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("GPU per local rank: known cases") {
  std::string error;
  // 8 processes, 8 GPUs, no CUDA_VISIBLE_DEVICES: local rank r on GPU r.
  CHECK(cell(place(View::kUnset, 8, 8, 1, true, &error)) == "0|1|2|3|4|5|6|7");
  // 2 processes x 2 workers on 4 GPUs: each takes two and runs a worker on each.
  CHECK(cell(place(View::kUnset, 2, 4, 2, true, &error)) == "01|23");
  // 3 processes on 8 GPUs: parts of 2, GPUs 6 and 7 unused.
  CHECK(cell(place(View::kUnset, 3, 8, 2, true, &error)) == "01|23|45");
  // CUDA_VISIBLE_DEVICES=7,6,5,4 for both: ordinals 0-1 and 2-3 are GPUs 7,6 and 5,4.
  CHECK(cell(place(View::kSameList, 2, 4, 2, true, &error)) == "67|45");
  // srun --gpus-per-task=1: each process sees its own GPU as device 0.
  CHECK(cell(place(View::kOwnList, 4, 4, 1, true, &error)) == "0|1|2|3");
  // allowMultiGPU false: one GPU per process, the first of its part.
  CHECK(cell(place(View::kUnset, 2, 8, 4, false, &error)) == "0|1");
  // 4 processes that all see 2 GPUs: refused, naming the numbers and the fix.
  CHECK(place(View::kUnset, 4, 2, 1, true, &error).empty());
  CHECK_THAT(error, Catch::Matchers::Contains("4 processes of this job on this machine see the "
                                              "same 2 GPU(s)"));
  CHECK_THAT(error, Catch::Matchers::Contains("--gpus-per-task=1"));
}

// Not a check: the table for the report (`test_gpu_per_rank "[.table]"`).
TEST_CASE("GPU per local rank: the table", "[.table]") {
  for (const View mode : {View::kUnset, View::kSameList, View::kOwnList}) {
    std::cout << (mode == View::kUnset      ? "\nCUDA_VISIBLE_DEVICES unset"
                  : mode == View::kSameList ? "\nCUDA_VISIBLE_DEVICES=7,6,... (the same for all)"
                                            : "\nCUDA_VISIBLE_DEVICES set per process by srun")
              << "; parallel.workers 8; cell: the GPUs (physical ids) each process's workers run "
                 "on, process by process; - refused\n";
    std::cout << "ranks\\GPUs";
    for (int g = 1; g <= kMostGpus; ++g) std::cout << " | " << g;
    std::cout << "\n";
    for (int processes = 1; processes <= kMostProcesses; ++processes) {
      std::cout << processes;
      for (int gpus = 1; gpus <= kMostGpus; ++gpus) {
        std::string error;
        const bool impossible = mode == View::kOwnList && gpus < processes;
        std::cout << " | "
                  << (impossible ? "n/a"
                                 : cell(place(mode, processes, gpus, kMostGpus, true, &error)));
      }
      std::cout << "\n";
    }
  }
}
