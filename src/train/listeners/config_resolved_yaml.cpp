// config.resolved.yaml: the config as it was run, every default filled in.
#include "config/config_loader.hpp"
#include "io/atomic_file.hpp"
#include "io/run_files.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class ConfigResolvedYaml final : public TrainingListener {
 public:
  explicit ConfigResolvedYaml(const ListenerContext& context)
      : config_(context.config), path_(context.run.file(run_files::kResolvedConfig)) {}

  void on_start(const RunInfo&) override {
    write_file_atomically(path_, dump_config_yaml(config_));
  }

 private:
  const Config& config_;
  std::string path_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_config_resolved_yaml(const ListenerContext& context) {
  return std::make_unique<ConfigResolvedYaml>(context);
}

}  // namespace dl
