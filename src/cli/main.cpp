// dl-train: trains neural networks data-parallel from one YAML file.
//   dl-train --config configs/mnist.yaml [--set key=value ...] [--resume | --overwrite]
//   dl-train validate --config FILE [--json] [--config-only]   check the config and its data
//   dl-train eval --model FILE [--config FILE] [--json] [--predictions CSV]
//   dl-train inspect --model FILE [--json]
//   dl-train info [--json]
//   dl-train report RUN_DIR [RUN_DIR...] [--output FILE]   report.html (report/report_html.hpp)
//   dl-train --version
//   dl-train predict --model FILE --input FILE [--output CSV]   (cli/model_commands.hpp)
//   dl-train export --format onnx --model FILE --output FILE
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/console_writer.hpp"
#include "cli/model_commands.hpp"
#include "cli/signals.hpp"
#include "core/error.hpp"
#include "core/out_of_memory.hpp"
#include "core/thread_start.hpp"
#include "parallel/process_group.hpp"
#include "report/build_info.hpp"

namespace {

void add_common(CLI::App& app, dl::CommonOptions& common, bool config_required) {
  auto* config = app.add_option("-c,--config", common.config_path, "YAML config file");
  if (config_required) config->required();
  app.add_option("--set", common.overrides,
                 "override a config value: key.path=value (repeatable), e.g. --set epochs=3")
      ->take_all();
}

// What training takes, on the top level (`dl-train --config FILE`) and on `dl-train train`
// alike: one option set, so both forms accept and refuse the same things.
struct TrainCommand {
  dl::CommonOptions common;
  bool resume = false;
  bool overwrite = false;
  bool restart_epoch = false;

  void add_to(CLI::App& app, bool config_required) {
    add_common(app, common, config_required);
    CLI::Option* resume_flag =
        app.add_flag("--resume", resume,
                     "continue the run in output.directory from its newest valid checkpoint");
    CLI::Option* overwrite_flag =
        app.add_flag("--overwrite", overwrite, "replace an existing run in output.directory");
    resume_flag->excludes(overwrite_flag);
    app.add_flag("--restart-epoch", restart_epoch,
                 "with --resume: after a change of batch size, data, seed or parallel mode, go "
                 "on from the saved parameters with the saved epoch started afresh (another "
                 "worker or rank count alone needs no flag: the epoch goes on, re-sharded)")
        ->needs(resume_flag);
  }

  int run(dl::ProcessGroup& processes) const {
    const int code =
        dl::run_train(common, dl::TrainFlags{resume, overwrite, restart_epoch}, processes);
    dl::pause_before_exit_for_tests();
    return code;
  }
};

// The commands other than training compute nothing that ranks could share. Started by a
// launcher with several processes, rank 0 does the command once, so that it is printed and its
// files are written once, and the other ranks end at once with 0. Returns whether this process is
// one of those. Rank 0 then holds no process group: its errors end it alone, as they would
// without a launcher, while the others finalize MPI.
bool leave_to_rank_zero(std::unique_ptr<dl::ProcessGroup>& processes, const std::string& command) {
  if (processes->size() <= 1) return false;
  const bool rank_zero = processes->rank() == 0;
  if (rank_zero)
    std::cerr << "dl-train: note: " << command << " runs in one process: rank 0 of the "
              << processes->size() << " the launcher started does it, the others end\n";
  processes.reset();
  return !rank_zero;
}

// Standard error through its own thread, each flush waiting at most this long: a reader that
// takes none of it by then (a full pipe nobody reads) has stopped reading, and neither a run's
// signal nor its final message may wait on it forever. Each whole line is handed to the writer
// as it ends; main() and abort_job flush std::cerr, so every message is written before the
// process exits or aborts the job.
void route_standard_error() {
  constexpr std::chrono::seconds kStandardErrorWait{2};
  dl::ConsoleWriter& errors = dl::ConsoleWriter::start(STDERR_FILENO, nullptr, kStandardErrorWait);
  std::cerr.rdbuf(errors.stream().rdbuf());
  std::clog.rdbuf(errors.stream().rdbuf());
  // std::cerr flushes after every `<<` (unitbuf), which handed "dl-train: " and "error: ..." to
  // the writer as two pieces, so that with 2>&1 (a batch job's log) a line of standard output
  // could land between them. The writer hands over whole lines; std::endl and std::flush still
  // flush at once.
  std::cerr.unsetf(std::ios_base::unitbuf);
}

// A usage error in the same one-line form as every other error ("dl-train: error: what; fix"),
// instead of CLI11's two lines.
std::string usage_error(const CLI::App* /*app*/, const CLI::Error& e) {
  return std::string("dl-train: error: ") + e.what() +
         "; see dl-train --help (or dl-train COMMAND --help)\n";
}

// CLI11 gives the top level the options written before a command's name, so training's options
// there (`dl-train --set epochs=3 validate -c f.yaml`, `dl-train -c f.yaml eval -m model.dlm`)
// would be read by no command: the command ran without them. Returns the usage error naming the
// first such option and where it belongs, or "" when there is none.
std::string option_before_command(const CLI::App& app) {
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  if (chosen.empty()) return {};
  const CLI::App& command = *chosen.front();
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() == 0) continue;
    const std::string name = option->get_name();
    const std::string& cmd = command.get_name();
    const std::string where =
        command.get_option_no_throw(name) != nullptr
            ? fmt::format("which reads only the options after its name; write it after '{}'", cmd)
            : fmt::format("which takes no {}; leave it out", name);
    return fmt::format(
        "dl-train: error: {} comes before the command '{}', {}; see dl-train {} --help\n", name,
        cmd, where, cmd);
  }
  return {};
}

// report's arguments: run directories, named as such when a path is something else.
std::string existing_run_directory(std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return path + ": no such run directory";
  if (!S_ISDIR(info.st_mode)) {
    return path +
           ": not a directory; give the run directory a training run wrote (its output.directory)";
  }
  return {};
}

// The commands that read what training wrote or what this machine has, beside training and the
// model commands: their options, filled by parsing, and the call of the one chosen.
struct ReadingCommands {
  dl::CommonOptions validate_common, eval_common;
  dl::ValidateFlags validate_flags;
  bool eval_json = false, inspect_json = false, info_json = false;
  std::string model_path, predictions_path, inspect_path, report_output;
  std::vector<std::string> report_runs;
  CLI::App *validate = nullptr, *eval = nullptr, *inspect = nullptr, *info = nullptr,
           *report = nullptr;

  void add_to(CLI::App& app) {
    const char* json_help = "print one JSON document instead of text";
    validate = app.add_subcommand(
        "validate",
        "check a config and read its data files as training would; print the config resolved "
        "and the layer table");
    add_common(*validate, validate_common, true);
    validate->add_flag("--json", validate_flags.json, json_help);
    validate->add_flag("--config-only", validate_flags.config_only,
                       "check the config only, not its data files (which may be absent here)");
    eval = app.add_subcommand("eval", "evaluate a saved model or checkpoint on the test set");
    add_common(*eval, eval_common, false);
    eval->add_option("-m,--model", model_path, "model.dlm or a checkpoint file")->required();
    eval->add_flag("--json", eval_json, json_help);
    eval->add_option("--predictions", predictions_path,
                     "also write each test example's label, prediction and probabilities (CSV)");
    inspect = app.add_subcommand("inspect", "print what a model or checkpoint file holds");
    inspect->add_option("-m,--model", inspect_path, "model.dlm or a checkpoint file")->required();
    inspect->add_flag("--json", inspect_json, json_help);
    info = app.add_subcommand("info", "list backends and devices");
    info->add_flag("--json", info_json, json_help);
    report = app.add_subcommand(
        "report", "write report.html for a run directory, or one page comparing several runs");
    report->add_option("runs", report_runs, "run directories")
        ->required()
        ->check(CLI::Validator(existing_run_directory, "DIR", "run directory"));
    report->add_option("-o,--output", report_output,
                       "the page to write (default: RUN_DIR/report.html for one run, "
                       "report.html for several)");
  }

  bool chosen() const { return *validate || *eval || *inspect || *info || *report; }

  // The chosen command's exit code.
  int run() const {
    if (*validate) return dl::run_validate(validate_common, validate_flags);
    if (*eval) return dl::run_eval(eval_common, model_path, eval_json, predictions_path);
    if (*inspect) return dl::run_inspect(inspect_path, inspect_json);
    if (*info) return dl::run_info(info_json);
    return dl::run_report(report_runs, report_output);
  }
};

// Whether standard output is a pipe or socket whose reader has gone (`| head`): its write end
// polls as an error or a hang-up. Asked when errno no longer tells: the write that failed may have
// been any of the command's, long before.
bool standard_output_reader_gone() {
  pollfd out{STDOUT_FILENO, POLLOUT, 0};
  return ::poll(&out, 1, 0) == 1 && (out.revents & (POLLERR | POLLHUP)) != 0;
}

// What a command printed on standard output (validate's config, eval's evaluation, predict's CSV,
// --help) that did not all reach it makes the command fail: `dl-train predict ... > p.csv` on a
// full disk ended with 0 and a cut p.csv. A reader that went away (`| head`) ends it with 141,
// as a shell's pipeline expects, without a message; any other failure is exit 6, said once.
// Training writes its console through its own writer, which handles both itself.
int with_standard_output_checked(int code) {
  errno = 0;
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && std::cout.good() && std::ferror(stdout) == 0) return code;
  if (err == EPIPE || standard_output_reader_gone())
    return code != 0 ? code : static_cast<int>(dl::ExitCode::kBrokenPipe);
  std::cerr << "dl-train: error: standard output: cannot write all of it"
            << (err != 0 ? std::string(" (") + std::strerror(err) + ")" : std::string())
            << "; what this command printed there is incomplete: check free disk space and the "
               "file size limit (ulimit -f)\n";
  return code != 0 ? code : static_cast<int>(dl::ExitCode::kIoError);
}

int run_command(int argc, char** argv) {
  dl::set_command_line(argc, argv);
  CLI::App app{"dl-train: data-parallel neural network training from one YAML file"};
  app.set_version_flag("--version", dl::version_text());
  app.require_subcommand(0, 1);
  app.failure_message(usage_error);
  TrainCommand top_level, train_command;
  top_level.add_to(app, false);
  CLI::App* train = app.add_subcommand("train", "train a network (the default command)");
  train_command.add_to(*train, true);
  ReadingCommands reading;
  reading.add_to(app);
  dl::ModelCommands model_commands;
  dl::add_model_commands(app, model_commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // `dl-train --config f.yaml validate`: the command misses its --config because it was
    // written before the command's name; that is the error to name, not "--config is required".
    const std::string misplaced =
        dynamic_cast<const CLI::RequiredError*>(&e) != nullptr ? option_before_command(app) : "";
    if (!misplaced.empty()) {
      std::cerr << misplaced;
      return static_cast<int>(dl::ExitCode::kConfigError);
    }
    const int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(dl::ExitCode::kConfigError);
  }
  if (const std::string misplaced = option_before_command(app); !misplaced.empty()) {
    std::cerr << misplaced;
    return static_cast<int>(dl::ExitCode::kConfigError);
  }

  // Under mpirun/srun every rank runs this; a failing rank ends the whole job (abort_job) so
  // that no other rank waits forever in a collective. A launcher that does not match this
  // dl-train is refused inside the try below, like any other config error.
  std::unique_ptr<dl::ProcessGroup> processes;
  const auto fail = [&](int code, const std::string& message) {
    const bool several = processes != nullptr && processes->size() > 1;
    // An error every rank meets alike (a config or data file all share) was printed once per
    // rank, with the launcher's noise of several aborts at once. Rank 0 says it and ends the job
    // at once; another rank first leaves rank 0 the time to, and speaks only when it is alone.
    constexpr std::chrono::milliseconds kLeaveItToRankZero{1500};
    if (several && processes->rank() != 0) std::this_thread::sleep_for(kLeaveItToRankZero);
    const std::string who = several ? "rank " + std::to_string(processes->rank()) + ": " : "";
    std::cerr << "dl-train: " << who << message << "\n";
    if (several) processes->abort_job(code);
    return code;
  };
  try {
    processes = dl::make_process_group(&argc, &argv);
    if (*train) {
      return train_command.run(*processes);
    }
    if (reading.chosen() || model_commands.chosen()) {
      if (leave_to_rank_zero(processes, app.get_subcommands().front()->get_name())) return 0;
      return reading.chosen() ? reading.run() : dl::run_model_command(model_commands);
    }
    if (top_level.common.config_path.empty()) {
      std::cerr << app.help();
      return static_cast<int>(dl::ExitCode::kConfigError);
    }
    return top_level.run(*processes);
  } catch (const dl::Error& e) {
    return fail(static_cast<int>(e.code()), std::string("error: ") + e.what());
  } catch (const std::bad_alloc&) {
    return fail(static_cast<int>(dl::ExitCode::kOutOfMemory), "error: " + dl::bad_alloc_message());
  } catch (const std::exception& e) {
    // Any exception's text is held to the typed errors' one bounded line.
    return fail(static_cast<int>(dl::ExitCode::kFailure),
                "internal error: " + dl::one_line(e.what()));
  }
}

}  // namespace

int main(int argc, char** argv) {
  dl::prepare_exception_unwinding();
  dl::prepare_standard_streams();
  try {
    route_standard_error();
  } catch (const dl::ThreadStartError& e) {
    // std::cerr still writes straight to the descriptor here: the writer never started.
    std::cerr << "dl-train: error: " << e.what() << std::endl;
    return static_cast<int>(e.code());
  }
  const int code = with_standard_output_checked(run_command(argc, argv));
  std::cerr.flush();  // the last lines, handed over without a flush of their own
  return code;
}
