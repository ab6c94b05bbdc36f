// Main of cuda_kernels_on_host: the Catch2 cases, then the count of kernels that ran. A kernel
// of cuda/ that no case launched fails the run (when every case ran), so none is skipped
// silently. Catch2's implementation is tests/catch_session.cpp's.
#include <algorithm>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "catch_session.hpp"
#include "host_grid.hpp"
#include "host_grid_support.hpp"

int main(int argc, char* argv[]) {
  const dl::testing::CatchSessionResult session = dl::testing::run_catch_session(argc, argv);
  if (!session.ran_cases) return session.status;
  const int failed = session.status;

  const std::vector<std::string> defined = dl::emu::kernels_defined();
  const std::vector<std::string> launched = dl::emu::kernels_run();
  std::vector<std::string> run, missing;
  std::set_intersection(defined.begin(), defined.end(), launched.begin(), launched.end(),
                        std::back_inserter(run));
  std::set_difference(defined.begin(), defined.end(), launched.begin(), launched.end(),
                      std::back_inserter(missing));
  std::cout << "kernels run on the host: " << run.size() << " of the " << defined.size()
            << " __global__ functions of cuda/ (" << dl::emu::instantiations_run()
            << " instantiations, " << dl::emu::launches_run() << " launches)\n";
  std::cout << "launch limits:";
  for (const auto& l : dl::testing::host_grid_limits())
    std::cout << " [" << dl::testing::describe(l) << "]";
  std::cout << "\n";
  for (const auto& m : missing) std::cout << "kernel never run on the host: " << m << "\n";
  if (!missing.empty() && !session.filtered) return failed + 1;
  return failed;
}
