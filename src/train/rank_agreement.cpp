#include "train/rank_agreement.hpp"

#include <cstdint>
#include <map>

#include <fmt/format.h>

#include "config/config_loader.hpp"
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
    text += text.empty() ? "" : "; ";
    text +=
        facts[i].describe_difference != nullptr
            ? fmt::format("{}: {}", facts[i].name, facts[i].describe_difference(mine, root[i + 1]))
            : fmt::format("{}: {} (rank 0: {})", facts[i].name, mine, root[i + 1]);
  }
  return text;
}

// A fact's value holds no newline: the config's keys are split by the unit separator, and a
// newline inside a value is written as \n.
constexpr char kKeySeparator = '\x1f';

std::map<std::string, std::string> unpack_config(const std::string& value) {
  std::map<std::string, std::string> keys;
  for (const std::string& entry : split_text(value, kKeySeparator)) {
    const std::size_t equals = entry.find('=');
    if (equals != std::string::npos) keys[entry.substr(0, equals)] = entry.substr(equals + 1);
  }
  return keys;
}

}  // namespace

std::string config_fact_value(const Config& config) {
  std::string value;
  for (const auto& [key, text] : flat_config(config)) {
    std::string one_line;
    for (const char c : text) one_line += c == '\n' ? std::string("\\n") : std::string(1, c);
    value += (value.empty() ? "" : std::string(1, kKeySeparator)) + key + "=" + one_line;
  }
  return value;
}

std::string config_difference(const std::string& mine, const std::string& root) {
  constexpr std::size_t kKeysNamed = 3;
  const std::map<std::string, std::string> a = unpack_config(mine), b = unpack_config(root);
  std::vector<std::string> keys;
  for (const auto& [key, value] : a)
    if (b.count(key) == 0 || b.at(key) != value) keys.push_back(key);
  for (const auto& [key, value] : b)
    if (a.count(key) == 0) keys.push_back(key);
  std::string text;
  for (std::size_t i = 0; i < keys.size() && i < kKeysNamed; ++i) {
    const auto here = a.find(keys[i]), there = b.find(keys[i]);
    text += fmt::format("{}{}: {} (rank 0: {})", i == 0 ? "" : ", ", keys[i],
                        here == a.end() ? "(none)" : here->second,
                        there == b.end() ? "(none)" : there->second);
  }
  if (keys.size() > kKeysNamed) text += fmt::format(" and {} more", keys.size() - kKeysNamed);
  return text;
}

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
