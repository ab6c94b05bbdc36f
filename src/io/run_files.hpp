// The names of the files a training run writes into its run directory, written once: the
// listeners that write them (src/train/listeners), the run directory that may delete them under
// --overwrite and refuses a name too long for its file system (src/train/run_directory.cpp), and
// the commands that read them back (report, predict and eval's model directory).
#pragma once

#include <cstdint>

namespace dl::run_files {

// A log far past what any run writes (scores.csv of a million logged rows is about 50 MiB) is
// not a log; reading it whole would only exhaust memory.
inline constexpr std::uint64_t kMaxLogBytes = std::uint64_t{1} << 30;

inline constexpr const char* kResolvedConfig = "config.resolved.yaml";
inline constexpr const char* kScores = "scores.csv";
inline constexpr const char* kTiming = "timing.csv";
inline constexpr const char* kMetrics = "metrics.jsonl";
inline constexpr const char* kEvaluationText = "evaluation.txt";
inline constexpr const char* kEvaluationJson = "evaluation.json";
inline constexpr const char* kModel = "model.dlm";
inline constexpr const char* kBestModel = "best_model.dlm";
inline constexpr const char* kEarlyStopping = "early_stopping.json";
inline constexpr const char* kSummary = "summary.json";
inline constexpr const char* kReport = "report.html";

// Every one of them, for the code that handles them all.
inline constexpr const char* kAll[] = {kResolvedConfig, kScores,         kTiming, kMetrics,
                                       kEvaluationText, kEvaluationJson, kModel,  kBestModel,
                                       kEarlyStopping,  kSummary,        kReport};

}  // namespace dl::run_files
