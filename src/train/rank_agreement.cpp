#include "train/rank_agreement.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "core/epoch_number.hpp"
#include "core/hash.hpp"
#include "core/split_text.hpp"
#include "report/build_info.hpp"

namespace dl {

namespace {

// One rank's facts as text: the host, then one value per line (values hold no newline).
std::string pack_facts(const std::vector<RankFact>& facts) {
  std::string text = host_name();
  for (const RankFact& f : facts) text += "\n" + f.value;
  return text;
}

// The facts in which `other` differs from rank 0's (`root`), as "name: value (rank 0: value)".
std::string differences(const std::vector<RankFact>& facts, const std::vector<std::string>& root,
                        const std::vector<std::string>& other, const RankFact*& first) {
  std::string text;
  for (std::size_t i = 0; i < facts.size(); ++i) {
    const std::string& mine = i + 1 < other.size() ? other[i + 1] : std::string("(none)");
    if (mine == root[i + 1]) continue;
    if (first == nullptr) first = &facts[i];
    text += fmt::format("{}{}: {} (rank 0: {})", text.empty() ? "" : "; ", facts[i].name, mine,
                        root[i + 1]);
  }
  return text;
}

}  // namespace

void check_ranks_agree(ProcessGroup& processes, const std::vector<RankFact>& facts) {
  if (processes.size() == 1) return;
  const std::vector<std::string> parts = processes.gather(pack_facts(facts), 0);
  if (processes.is_root()) {
    const std::vector<std::string> root = split_text(parts[0], '\n');
    const RankFact* first = nullptr;
    std::string message;
    int disagreeing = 0;
    for (std::size_t r = 1; r < parts.size(); ++r) {
      const std::vector<std::string> other = split_text(parts[r], '\n');
      const RankFact* first_here = nullptr;
      const std::string diff = differences(facts, root, other, first_here);
      if (diff.empty()) continue;
      if (++disagreeing > 1) continue;
      first = first_here;
      message = fmt::format("rank {} of {} (host {}) differs from rank 0 (host {}): {}", r,
                            processes.size(), other[0], root[0], diff);
    }
    if (first != nullptr) {
      const std::string more =
          disagreeing > 1 ? fmt::format(" ({} more ranks differ)", disagreeing - 1) : "";
      throw Error(first->code, fmt::format("{}{}; {}", message, more, first->fix));
    }
  }
  // Rank 0 reaches this only when every rank agrees; when it throws, abort_job ends the ranks
  // waiting here.
  int agreed = 1;
  processes.broadcast(&agreed, sizeof(agreed), 0);
}

void check_replicas_agree(ProcessGroup& processes, Model& model, int epoch) {
  if (processes.size() == 1) return;
  std::vector<float> parameters(model.parameter_count());
  model.download_parameters(parameters.data());
  const std::uint64_t hash = fnv1a(parameters.data(), parameters.size() * sizeof(float));
  check_ranks_agree(
      processes,
      {{fmt::format("parameters after epoch {}", epoch_number(epoch)),
        fmt::format("hash {:016x}", hash), ExitCode::kFailure,
        "the ranks computed different updates: give every node the same CPU kernels (cpu.kernels, "
        "DL_CPU_ISA) and GPU model, and resume from the last checkpoint, which holds rank 0's"}});
}

std::string describe_contents(const Dataset& data) {
  const std::uint64_t hash = data.content_hash();
  return fmt::format("{} samples of {}, content hash {:016x}", data.size(), data.shape_text(),
                     hash);
}

}  // namespace dl
