#include "train/training_state.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "config/config_loader.hpp"
#include "core/epoch_number.hpp"
#include "core/error.hpp"
#include "core/figure_text.hpp"
#include "train/resume_keys.hpp"

namespace dl {

namespace {

constexpr const char* kTrainSecondsKey = "train_seconds";
constexpr const char* kSamplesKey = "samples_trained";
// "LOSS CORRECT SAMPLES" of the epoch in progress.
constexpr const char* kEpochSumsKey = "epoch_train_sums";
// Samples of the epoch's order trained before the checkpoint (any layout can go on from there).
constexpr const char* kEpochPositionKey = "epoch_position";
// The last score reported (RunProgress::last_score), exactly: "0.12345678901234568", "nan".
constexpr const char* kLastScoreKey = "last_score";
// The resolved config the checkpoint was written under (dump_config_yaml), for naming what a
// resume changed.
constexpr const char* kResolvedConfigKey = "resolved_config";
// Followed by the global worker's index: "loss_scaler.0", "loss_scaler.1", ...
constexpr const char* kLossScalerKeyPrefix = "loss_scaler.";
// Config::deterministic and worker 0's Backend::convolution_algorithms(): a resume says when they
// differ from the run's now (the bits may then differ from an uninterrupted run's).
constexpr const char* kDeterministicKey = "deterministic";
constexpr const char* kConvolutionAlgorithmsKey = "convolution_algorithms";

const std::string* metadata(const CheckpointState& state, const std::string& key) {
  const auto it = state.metadata.find(key);
  return it == state.metadata.end() ? nullptr : &it->second;
}

[[noreturn]] void throw_bad_metadata(const std::string& path, const char* key,
                                     const std::string& value, const char* expected) {
  throw CheckpointError(fmt::format(
      "{}: metadata {} is \"{}\", not {}; the file is damaged: resume from an older checkpoint",
      path, key, value, expected));
}

// A metadata number, read whole and range-checked: a checkpoint whose checksums hold can still
// carry text that is no number.
double seconds_value(const std::string& path, const char* key, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || errno != 0 || !std::isfinite(seconds) || seconds < 0)
    throw_bad_metadata(path, key, value, "a number of seconds >= 0");
  return seconds;
}

// A score, read whole: any double, non-finite ones included ("nan", "inf", "-inf"), which a
// diverging run reports.
double score_value(const std::string& path, const char* key, const std::string& value) {
  char* end = nullptr;
  const double score = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0') throw_bad_metadata(path, key, value, "a score");
  return score;
}

// "LOSS CORRECT SAMPLES" of the epoch in progress. The loss sum may be NaN or infinite: with
// onNonFiniteLoss: skip a non-finite batch loss still counts in it (the epoch's train_loss is
// then NaN, as Keras's would be); operator>> reads no "nan", so such a checkpoint was refused.
void read_epoch_sums(const std::string& path, const std::string& value, RunProgress& progress) {
  const char* p = value.c_str();
  char* end = nullptr;
  bool ok = true;
  const auto next_double = [&] {
    const double v = std::strtod(p, &end);
    ok = ok && end != p;
    p = end;
    return v;
  };
  progress.epoch_loss = next_double();
  progress.epoch_correct = next_double();
  errno = 0;
  progress.epoch_samples = std::strtoll(p, &end, 10);
  ok = ok && end != p && errno == 0;
  p = end;
  while (*p == ' ') ++p;
  // A count below 0, or more correct than counted, made the epoch's train_accuracy up.
  if (!ok || *p != '\0' || progress.epoch_samples < 0 ||
      !(progress.epoch_correct >= 0 && progress.epoch_correct <= progress.epoch_samples))
    throw_bad_metadata(path, kEpochSumsKey, value,
                       "a loss sum, a correct count and a sample count");
}

std::int64_t count_value(const std::string& path, const char* key, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  const long long count = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || count < 0)
    throw_bad_metadata(path, key, value, "a count >= 0");
  return static_cast<std::int64_t>(count);
}

// The layout of the job that wrote the checkpoint, range-checked: "-3 ranks x 1 worker" or
// "1 rank x 0 workers" was resumed as another layout, and a count of global workers past an int
// overflowed the re-sharding's sums.
std::optional<JobLayout> checked_layout(const CheckpointState& state, const std::string& path) {
  const std::optional<JobLayout> saved = saved_layout(state);
  if (saved && (saved->ranks < 1 || saved->workers < 1 ||
                std::int64_t{saved->ranks} * saved->workers > std::numeric_limits<int>::max())) {
    throw CheckpointError(fmt::format(
        "{}: metadata records a job of {}, not of at least 1 rank x 1 worker; the file is "
        "damaged: resume from an older checkpoint",
        path, describe(*saved)));
  }
  return saved;
}

}  // namespace

TrainingState::TrainingState(const Config& config, ParallelTrainer& trainer, RunProgress& progress,
                             const Listeners& listeners, CheckpointDirectory& checkpoints)
    : config_(config),
      trainer_(trainer),
      progress_(progress),
      listeners_(listeners),
      checkpoints_(checkpoints) {}

CheckpointState TrainingState::capture(const std::string& kind, const RunPosition& next) {
  CheckpointState state;
  state.kind = kind;
  state.config_hash = config_hash(config_);
  Model& model = trainer_.model(0);
  state.network_signature = model.signature();
  state.epoch = next.epoch;
  state.round_in_epoch = next.round;
  state.iteration = next.iteration;
  state.parameters.resize(model.parameter_count());
  model.download_parameters(state.parameters.data());
  if (kind == kCheckpointKind) {
    // Every replica of the job, by global worker: the other ranks' too, not only this one's.
    ReplicaStates replicas = trainer_.replica_states();
    state.updater_states = std::move(replicas.updaters);
    for (const auto& listener : listeners_) listener->on_checkpoint_save(state);
    save_resume_keys(config_, trainer_.ranks(), state);
    for (std::size_t g = 0; g < replicas.loss_scalers.size(); ++g)
      state.metadata[kLossScalerKeyPrefix + std::to_string(g)] = replicas.loss_scalers[g];
  } else {
    // eval, predict and export pair a model with a config: its parameter layout alone would
    // let a config with other inputs or activations, but the same counts, compute with it.
    save_network_keys(config_, state);
  }
  for (const auto& [key, value] : run_metadata_) state.metadata[key] = value;
  state.metadata[kDeterministicKey] = config_.deterministic ? "true" : "false";
  if (kind == kCheckpointKind) state.metadata[kResolvedConfigKey] = dump_config_yaml(config_);
  const std::string algorithms = model.backend().convolution_algorithms();
  if (!algorithms.empty()) state.metadata[kConvolutionAlgorithmsKey] = algorithms;
  state.metadata[kTrainSecondsKey] = fmt::format("{:.6f}", progress_.run_seconds());
  state.metadata[kSamplesKey] = std::to_string(progress_.samples_trained);
  if (kind == kCheckpointKind) {
    state.metadata[kEpochPositionKey] =
        std::to_string(trainer_.epoch_position(next.epoch, next.round));
    if (progress_.last_score)
      state.metadata[kLastScoreKey] = fmt::format("{:.17g}", figure(*progress_.last_score));
  }
  state.metadata[kEpochSumsKey] = fmt::format("{:.17g} {:.17g} {}", figure(progress_.epoch_loss),
                                              progress_.epoch_correct, progress_.epoch_samples);
  return state;
}

std::string TrainingState::save_checkpoint(const RunPosition& next) {
  return checkpoints_.save(capture(kCheckpointKind, next));
}

void TrainingState::save_model(const std::string& path, const RunPosition& next) {
  write_checkpoint(path, capture(kModelKind, next));
}

RunPosition TrainingState::restore(const CheckpointState& state, const std::string& path,
                                   std::vector<std::string>& log) {
  Model& model = trainer_.model(0);
  if (state.network_signature != model.signature() ||
      state.parameters.size() != model.parameter_count()) {
    throw CheckpointError(fmt::format(
        "{}: saved from a different network than the config describes ({}); resume with the "
        "config the run was started with, or start a new run in another output.directory",
        path, signature_difference(state.network_signature, model.signature())));
  }
  RunPosition position{static_cast<int>(state.epoch), state.round_in_epoch, state.iteration};
  check_data_order(state, path, position, log);
  if (state.config_hash != config_hash(config_)) log.push_back(config_change_note(state));
  note_changed_algorithms(state, log);
  model.upload_parameters(state.parameters.data());
  trainer_.replicate_parameters();
  restore_updater_states(state, path);
  progress_.iteration = state.iteration;
  if (const std::string* s = metadata(state, kTrainSecondsKey))
    progress_.seconds_before = seconds_value(path, kTrainSecondsKey, *s);
  if (const std::string* s = metadata(state, kSamplesKey))
    progress_.samples_trained = count_value(path, kSamplesKey, *s);
  // A checkpoint written before it was kept leaves no score until the run reports one.
  progress_.last_score.reset();
  if (const std::string* s = metadata(state, kLastScoreKey))
    progress_.last_score = score_value(path, kLastScoreKey, *s);
  if (const std::string* s = metadata(state, kEpochSumsKey)) read_epoch_sums(path, *s, progress_);
  for (const auto& listener : listeners_) listener->on_checkpoint_restore(state, path);
  restore_loss_scalers(state, path);
  log.push_back(fmt::format("resume: {} ({}, iteration {})", path,
                            describe_position(position.epoch, position.round), position.iteration));
  return position;
}

// "resume: note: the config differs from the one the checkpoint was saved with", naming the
// keys from the checkpoint's copy of its config (a checkpoint written before it kept one names
// none): a copied run directory's output.directory, a changed console.
std::string TrainingState::config_change_note(const CheckpointState& state) const {
  constexpr std::size_t kKeysNamed = 3;
  std::string note = "resume: note: the config differs from the one the checkpoint was saved with";
  const std::string* saved_text = metadata(state, kResolvedConfigKey);
  if (saved_text == nullptr) return note;
  std::map<std::string, std::string> saved;
  try {
    saved = flat_config_dump(*saved_text);
  } catch (const std::exception&) {
    return note;  // a damaged copy names nothing; the run goes on as before
  }
  const std::map<std::string, std::string> now = flat_config(config_);
  std::vector<std::string> changes;
  for (const auto& [key, value] : now) {
    const auto before = saved.find(key);
    const std::string was = before == saved.end() ? "(none)" : before->second;
    if (was != value) changes.push_back(fmt::format("{}: {} -> {}", key, was, value));
  }
  for (const auto& [key, value] : saved)
    if (now.count(key) == 0) changes.push_back(fmt::format("{}: {} -> (none)", key, value));
  if (changes.empty()) return note;
  note += ": ";
  for (std::size_t i = 0; i < changes.size() && i < kKeysNamed; ++i)
    note += (i == 0 ? "" : ", ") + changes[i];
  if (changes.size() > kKeysNamed) note += fmt::format(" and {} more", changes.size() - kKeysNamed);
  return note;
}

// Not refused: the run goes on correctly, but its bits may differ from an uninterrupted run's.
// Checkpoints written before these were recorded say nothing.
void TrainingState::note_changed_algorithms(const CheckpointState& state,
                                            std::vector<std::string>& log) const {
  const std::string now_deterministic = config_.deterministic ? "true" : "false";
  if (const std::string* saved = metadata(state, kDeterministicKey);
      saved != nullptr && *saved != now_deterministic) {
    log.push_back(fmt::format("resume: note: deterministic: {} -> {}", *saved, now_deterministic));
  }
  const std::string now = trainer_.model(0).backend().convolution_algorithms();
  if (const std::string* saved = metadata(state, kConvolutionAlgorithmsKey);
      saved != nullptr && *saved != now) {
    log.push_back(fmt::format(
        "resume: note: the convolution algorithms differ from the checkpoint's: {} -> {}", *saved,
        now.empty() ? "(none)" : now));
  }
}

// A position means the same samples only under the same batch size, data, seed and network:
// refused when they changed, unless --restart-epoch starts the epoch afresh. Another layout
// (ranks x workers) alone goes on from the same sample of the epoch's order (continue_in_epoch).
void TrainingState::check_data_order(const CheckpointState& state, const std::string& path,
                                     RunPosition& position, std::vector<std::string>& log) {
  const std::vector<std::string> changed =
      changed_resume_keys(config_, trainer_.ranks(), state);
  const JobLayout now{trainer_.ranks(), config_.parallel.workers};
  const std::optional<JobLayout> saved = checked_layout(state, path);
  if (!saved && trainer_.ranks() > 1) {
    log.push_back(
        "resume: note: the checkpoint does not record the job's layout (written before "
        "dl-train recorded it): each rank takes the saved updater states of workers 0, 1, ...");
  }
  // The layout alone is no reason to refuse, so it is not named among the reasons either.
  const std::vector<std::string> blocking =
      saved && !changed.empty() ? changed_beyond_layout(state, *saved) : changed;
  if (blocking.empty()) {
    continue_in_epoch(state, path, saved.value_or(now), position, log);
    return;
  }
  std::string list;
  for (const std::string& c : blocking) list += (list.empty() ? "" : "; ") + c;
  if (!allow_changed_data_order_) {
    throw CheckpointError(fmt::format(
        "{}: the config differs from the run's in what decides the data order or the model "
        "({}); resume with the run's config (config.resolved.yaml), or pass --restart-epoch to "
        "go on from the saved parameters with epoch {} started afresh",
        path, list, epoch_number(position.epoch)));
  }
  position.round = 0;
  log.push_back(fmt::format("resume: --restart-epoch: epoch {} starts afresh ({})",
                            epoch_number(position.epoch), list));
}

std::vector<std::string> TrainingState::changed_beyond_layout(const CheckpointState& state,
                                                             const JobLayout& saved) const {
  Config as_saved = config_;
  as_saved.parallel.workers = saved.workers;
  return changed_resume_keys(as_saved, saved.ranks, state);
}

// The epoch goes on after the samples of its order the checkpoint's job trained (recorded, or
// its rounds times its round size), re-sharded when this job's layout differs.
void TrainingState::continue_in_epoch(const CheckpointState& state, const std::string& path,
                                      const JobLayout& saved, RunPosition& position,
                                      std::vector<std::string>& log) {
  const std::int64_t saved_round_size =
      static_cast<std::int64_t>(saved.ranks) * saved.workers * config_.batchSize;
  std::int64_t trained = position.round * saved_round_size;
  if (const std::string* s = metadata(state, kEpochPositionKey))
    trained = count_value(path, kEpochPositionKey, *s);
  const std::int64_t size = trainer_.epoch_samples();
  if (trained > size) {
    throw CheckpointError(fmt::format(
        "{}: its position in epoch {} ({} samples trained) lies beyond the training set's {} "
        "samples; resume with the data the run was started with",
        path, epoch_number(position.epoch), trained, size));
  }
  position.round = trainer_.continue_epoch_at(position.epoch, trained);
  const JobLayout now{trainer_.ranks(), config_.parallel.workers};
  if (saved == now) return;
  const int saved_workers = saved.ranks * saved.workers;
  const std::string replicas =
      trainer_.replicas_share_updater_state() || saved_workers == trainer_.global_workers()
          ? std::string()
          : fmt::format("; worker g takes the updater state of saved worker g mod {}",
                        saved_workers);
  log.push_back(fmt::format(
      "resume: written by {}, resumed by {}: epoch {} goes on after sample {} of {} in the same "
      "order, re-sharded over {} worker{}{}",
      describe(saved), describe(now), epoch_number(position.epoch), trained, size,
      trainer_.global_workers(), trainer_.global_workers() == 1 ? "" : "s", replicas));
}

// Worker w's updater state from the saved global worker g modulo those saved (one when they
// were averaged; another count only under --restart-epoch or from a checkpoint that predates
// the rank count).
void TrainingState::restore_updater_states(const CheckpointState& state, const std::string& path) {
  for (int w = 0; w < trainer_.workers(); ++w) {
    const auto g = static_cast<std::size_t>(trainer_.global(w));
    Optimizer& opt = trainer_.optimizer(w);
    if (opt.state_floats() == 0) continue;
    if (state.updater_states.empty()) {
      throw CheckpointError(path + ": holds no updater state; it cannot resume this updater");
    }
    const std::vector<float>& s =
        state.updater_states[g % state.updater_states.size()];
    if (s.size() != opt.state_floats()) {
      throw CheckpointError(fmt::format(
          "{}: updater state has {} values, the {} updater needs {}; resume with the updater the "
          "run was started with",
          path, s.size(), static_cast<int>(opt.type()), opt.state_floats()));
    }
    trainer_.model(w).backend().upload(opt.state(), s.data(), s.size() * sizeof(float));
  }
}

// Each worker's scaler from the checkpoint (global worker g from the saved worker g modulo those
// saved, as for updater states): a dynamic scale, and every scaler's counts of skipped steps. A
// checkpoint written without loss scaling by an older dl-train saved none: the initial state.
void TrainingState::restore_loss_scalers(const CheckpointState& state, const std::string& path) {
  std::vector<const std::string*> saved;  // saved[w]: worker w's state, for w = 0, 1, ...
  while (const std::string* s =
             metadata(state, kLossScalerKeyPrefix + std::to_string(saved.size())))
    saved.push_back(s);
  if (saved.empty()) return;
  for (int w = 0; w < trainer_.workers(); ++w) {
    try {
      const auto g = static_cast<std::size_t>(trainer_.global(w));
      trainer_.loss_scaler(w).restore_state(*saved[g % saved.size()]);
    } catch (const CheckpointError& e) {
      throw CheckpointError(path + ": " + e.what());
    }
  }
}

}  // namespace dl
