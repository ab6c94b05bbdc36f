#include "parallel/node_share.hpp"

#include <cstdlib>
#include <functional>

#include "core/node_identity.hpp"

namespace dl {

NodeShare share_of(const std::vector<std::uint64_t>& keys,
                   const std::vector<std::uint64_t>& local_ranks, int rank) {
  NodeShare share{0, 0};
  const auto me = static_cast<std::size_t>(rank);
  for (std::size_t r = 0; r < keys.size(); ++r) {
    if (keys[r] != keys.at(me)) continue;
    ++share.count;
    const bool before = local_ranks.at(r) < local_ranks.at(me) ||
                        (local_ranks.at(r) == local_ranks.at(me) && r < me);
    if (before) ++share.index;
  }
  return share;
}

NodeShare share_on_this_machine(ProcessGroup& group, const std::string& what) {
  if (group.size() == 1) return {};
  // Every rank runs the same binary, so std::hash agrees between them.
  // The machine as NCCL tells machines apart (host name and boot id): containers of several
  // machines that share a host name do not share their cores or GPUs.
  const std::uint64_t key = std::hash<std::string>{}(node_identity() + '\0' + what);
  const auto local_rank = static_cast<std::uint64_t>(group.local_rank().rank);
  return share_of(group.all_gather(key), group.all_gather(local_rank), group.rank());
}

NodeShare share_of_visible_gpus(ProcessGroup& group) {
  const char* listed = std::getenv("CUDA_VISIBLE_DEVICES");
  // An unset variable is told apart from an empty one (which hides every GPU).
  return share_on_this_machine(group, listed == nullptr ? std::string("\n") : listed);
}

}  // namespace dl
