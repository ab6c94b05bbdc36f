// make_process_group() for the build without MPI. A plain start is one process. Started by a
// launcher as several processes, each would train alone and all would write the same run
// directory, so that is refused with a message saying how to get MPI.
#include <fmt/format.h>

#include "core/error.hpp"
#include "parallel/launcher_env.hpp"
#include "parallel/process_group.hpp"

namespace dl {

std::unique_ptr<ProcessGroup> make_process_group(int* /*argc*/, char*** /*argv*/) {
  const std::optional<Launcher> launcher = detect_launcher();
  if (launcher && launcher->processes > 1) {
    throw ConfigError(
        fmt::format("dl-train: started by {} as {} processes, but this dl-train was "
                    "built without MPI; install an MPI (Debian: libopenmpi-dev) and "
                    "rebuild with `meson setup -Dmpi=enabled`, or start one process",
                    launcher->name, launcher->processes));
  }
  return make_single_process_group();
}

}  // namespace dl
