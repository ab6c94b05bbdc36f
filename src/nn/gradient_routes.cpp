#include "nn/gradient_routes.hpp"

#include <algorithm>
#include <cstddef>

#include "core/error.hpp"
#include "nn/layer_graph.hpp"

namespace dl {

namespace {

// One read of a layer's output: input k of layer `reader`.
struct Read {
  int reader, k;
};

// The reads of each layer's output in backward order: readers from the highest down, a reader's
// inputs in their order (the order the unfused planner wrote them in).
std::vector<std::vector<Read>> reads_of(const std::vector<std::vector<int>>& sources) {
  std::vector<std::vector<Read>> reads(sources.size());
  for (std::size_t r = sources.size(); r-- > 0;)
    for (std::size_t k = 0; k < sources[r].size(); ++k)
      if (sources[r][k] != kNetworkInput)
        reads[static_cast<std::size_t>(sources[r][k])].push_back(
            Read{static_cast<int>(r), static_cast<int>(k)});
  return reads;
}

class Planner {
 public:
  Planner(const std::vector<std::vector<int>>& sources, const GradientRouteInputs& layers)
      : passes_(layers.passes_through),
        keeps_(layers.keeps_output_gradient),
        absorbs_(layers.absorbs),
        scratch_used_(sources.size(), 0) {
    const std::size_t n = sources.size();
    DL_CHECK(passes_.size() == n && keeps_.size() == n && absorbs_.size() == n &&
                 layers.read_at.size() == n,
             "one entry per layer");
    g_.inputs.resize(n);
    for (std::size_t i = 0; i < n; ++i) g_.inputs[i].resize(sources[i].size());
    g_.sums_after.resize(n);
    g_.owner.resize(n);
    g_.absorbed.assign(n, -1);
    g_.first_write.assign(n, -1);
    g_.last_read = layers.read_at;
    for (std::size_t i = 0; i < n; ++i) g_.owner[i] = static_cast<int>(i);
  }

  GradientRoutes plan(const std::vector<std::vector<Read>>& reads) {
    // Highest first: a reader's own buffer is settled before its sources alias into it.
    for (std::size_t s = reads.size(); s-- > 0;) {
      if (reads[s].empty()) {
        g_.first_write[s] = static_cast<int>(s);  // the output layer's: written by the loss
      } else if (aliases(s, reads[s])) {
        alias(s, reads[s].front());
      } else {
        sum(s, reads[s]);
      }
    }
    return g_;
  }

 private:
  bool aliases(std::size_t s, const std::vector<Read>& reads) const {
    return reads.size() == 1 && passes_[static_cast<std::size_t>(reads.front().reader)] &&
           keeps_[s] && !passes_[s];
  }

  void alias(std::size_t s, Read read) {
    const auto r = static_cast<std::size_t>(read.reader);
    g_.inputs[r][static_cast<std::size_t>(read.k)].mode = GradientRoutes::Mode::kInPlace;
    g_.owner[s] = read.reader;
    g_.last_read[r] = std::min(g_.last_read[r], g_.last_read[s]);
    g_.first_write[s] = -1;
    g_.last_read[s] = -1;
  }

  // The writers (readers that do not pass their gradient through; if none, the highest reader)
  // make the sum, the highest straight and the others through scratch slots; the other readers'
  // dy is added once the sum has its first term.
  void sum(std::size_t s, const std::vector<Read>& reads) {
    std::vector<Read> writers, deferred;
    for (const Read& read : reads)
      (passes_[static_cast<std::size_t>(read.reader)] ? deferred : writers).push_back(read);
    if (writers.empty()) {
      writers.push_back(deferred.front());
      deferred.erase(deferred.begin());
    }
    const int top = writers.front().reader;
    g_.first_write[s] = top;
    input(writers.front()).mode = GradientRoutes::Mode::kStraight;
    for (std::size_t w = 1; w < writers.size(); ++w) {
      const auto r = static_cast<std::size_t>(writers[w].reader);
      const int slot = scratch_used_[r]++;
      g_.scratch_slots = std::max(g_.scratch_slots, scratch_used_[r]);
      input(writers[w]) = {GradientRoutes::Mode::kScratch, slot};
      g_.sums_after[r].push_back({static_cast<int>(s), slot, -1});
    }
    for (const Read& read : deferred) {
      input(read).mode = GradientRoutes::Mode::kInPlace;
      int step = std::min(read.reader, top);
      if (step == static_cast<int>(s) + 1 && absorbs_[s] && g_.absorbed[s] < 0) {
        g_.absorbed[s] = read.reader;
        step = static_cast<int>(s);  // read by layer s's backward
      } else {
        g_.sums_after[static_cast<std::size_t>(step)].push_back(
            {static_cast<int>(s), -1, read.reader});
      }
      int& last = g_.last_read[static_cast<std::size_t>(read.reader)];
      last = std::min(last, step);
    }
  }

  GradientRoutes::Input& input(Read read) {
    return g_.inputs[static_cast<std::size_t>(read.reader)][static_cast<std::size_t>(read.k)];
  }

  const std::vector<bool>& passes_;
  const std::vector<bool>& keeps_;
  const std::vector<bool>& absorbs_;
  std::vector<int> scratch_used_;  // per step: scratch slots taken
  GradientRoutes g_;
};

}  // namespace

GradientRoutes plan_gradient_routes(const std::vector<std::vector<int>>& sources,
                                    const GradientRouteInputs& layers) {
  return Planner(sources, layers).plan(reads_of(sources));
}

}  // namespace dl
