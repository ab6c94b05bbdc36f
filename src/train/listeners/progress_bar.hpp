// The text of the console's progress bar (console_log.cpp), kept apart from the listener so the
// layout can be tested without a run: one line, redrawn in place on a terminal.
#pragma once

#include <cstdint>
#include <string>

namespace dl {

struct ProgressLine {
  std::int64_t done = 0;      // rounds of the epoch finished
  std::int64_t total = 0;     // rounds in the epoch
  double seconds = 0.0;       // since the epoch (or this process's part of it) started
  double eta_seconds = -1.0;  // negative: not known yet
  double loss = 0.0;          // running mean of the epoch's training loss
  double images_per_second = 0.0;
};

// "120/469 [=======>......................] - ETA 0:12 - loss 0.2345 - 1234 img/s"; once the
// epoch is done (done == total) the ETA gives way to the epoch's time.
std::string format_progress_line(const ProgressLine& line, int bar_width = 30);

// "0:07", "12:03", "1:02:03": minutes and seconds, hours when needed.
std::string format_duration(double seconds);

}  // namespace dl
