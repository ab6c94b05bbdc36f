// `--json` for validate, eval, inspect and info: one JSON document on standard output, through
// the one JSON writer.
#pragma once

#include <string>
#include <vector>

#include "backend/backend_registry.hpp"
#include "config/config.hpp"
#include "io/checkpoint.hpp"
#include "parallel/thread_budget.hpp"
#include "train/evaluator.hpp"

namespace dl {

// Each prints one JSON document of what the text form of the command prints.
// validate: `data` is the "data OK: ..." line of the data check, empty under --config-only.
void print_validate_json(const std::string& config_path, const Config& config,
                         const std::string& data);
void print_eval_json(const std::string& model_path, const CheckpointState& state,
                     const std::string& test_set, std::size_t examples,
                     const EvaluationResult& result);
void print_inspect_json(const std::string& model_path, const CheckpointState& state);
void print_info_json(const ThreadBudget& cpus, const std::string& blas,
                     const BackendAvailability& available);

}  // namespace dl
