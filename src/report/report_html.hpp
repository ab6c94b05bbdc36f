// report.html: one self-contained page (inline CSS and SVG, no script, nothing fetched) showing
// one run, or comparing several: loss per iteration and per epoch, test accuracy and F1 per
// epoch, learning rate, images/s, the last confusion matrix as a heat map, the resolved config,
// the layer table and provenance (from summary.json once the run has ended).
#pragma once

#include <string>
#include <vector>

#include "report/run_record.hpp"

namespace dl {

std::string render_report(const std::vector<RunRecord>& runs);

// Reads `run_directory` and writes its report.html (atomically: a browser reloading the page
// during training never sees half of it). Returns the path written.
std::string write_run_report(const std::string& run_directory);
// Where a run's own report goes: RUN_DIR/report.html.
std::string run_report_path(const std::string& run_directory);

}  // namespace dl
