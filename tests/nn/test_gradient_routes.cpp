// The backward pass's gradient routes (nn/gradient_routes.hpp) on small graphs: aliases into a
// pass-through reader's dy, deferred sums in place of copies, sums absorbed by the layer whose
// gradient they make, scratch slots where several layers write, and the buffer lifetimes the slot
// planner receives. Whole-model finite differences through the same routes: test_graph.cpp and
// test_in_place.cpp.
#include <catch2/catch.hpp>

#include <vector>

#include "nn/gradient_routes.hpp"

namespace {

using Mode = dl::GradientRoutes::Mode;

bool has_sum(const dl::GradientRoutes& g, int step, int into, int from_slot, int from_layer) {
  for (const dl::GradientRoutes::Sum& s : g.sums_after[static_cast<std::size_t>(step)])
    if (s.into == into && s.from_slot == from_slot && s.from_layer == from_layer) return true;
  return false;
}

dl::GradientRouteInputs properties(std::vector<bool> passes, std::vector<bool> keeps,
                                   std::vector<bool> absorbs) {
  dl::GradientRouteInputs layers;
  for (std::size_t i = 0; i < passes.size(); ++i) layers.read_at.push_back(static_cast<int>(i));
  layers.passes_through = std::move(passes);
  layers.keeps_output_gradient = std::move(keeps);
  layers.absorbs = std::move(absorbs);
  return layers;
}

// 0 (the block's input) -> 1 conv -> 2 batch norm -> 3 add(2, 0) -> 4 output; layer 0 adds a
// term to its dy as it reads it (the add of the block before) or not.
const std::vector<std::vector<int>> kBlock{{-1}, {0}, {1}, {2, 0}, {3}};
dl::GradientRouteInputs block(bool input_absorbs) {
  return properties({false, false, false, true, false}, {false, false, true, false, false},
                    {input_absorbs, false, false, true, false});
}

}  // namespace

TEST_CASE("gradient routes: a residual block copies nothing", "[nn][graph]") {
  const dl::GradientRoutes g = dl::plan_gradient_routes(kBlock, block(false));
  CHECK(g.inputs[0][0].mode == Mode::kNone);
  // The batch norm, read by the add alone and reading its dy only, takes the add's buffer.
  CHECK(g.inputs[3][0].mode == Mode::kInPlace);
  CHECK(g.owner[2] == 3);
  CHECK(g.first_write[2] == -1);
  // The shortcut: the convolution writes the sum's first term, then the add's dy is added.
  CHECK(g.inputs[3][1].mode == Mode::kInPlace);
  CHECK(g.inputs[1][0].mode == Mode::kStraight);
  CHECK(g.first_write[0] == 1);
  CHECK(has_sum(g, 1, 0, -1, 3));
  CHECK(g.absorbed[0] == -1);
  // So the add's buffer lives until that sum, and the batch norm's step reads it too.
  CHECK(g.last_read[3] == 1);
  CHECK(g.scratch_slots == 0);
}

TEST_CASE("gradient routes: a sum just before its layer's step is absorbed by that layer",
          "[nn][graph]") {
  // The add's dy is added by layer 0's backward, not in a pass after the convolution's step.
  const dl::GradientRoutes g = dl::plan_gradient_routes(kBlock, block(true));
  CHECK(g.absorbed[0] == 3);
  CHECK(g.sums_after[1].empty());
  CHECK(g.inputs[3][1].mode == Mode::kInPlace);
  CHECK(g.inputs[1][0].mode == Mode::kStraight);
  // The add's buffer lives until layer 0's step reads it.
  CHECK(g.last_read[3] == 0);
}

TEST_CASE("gradient routes: three readers, scratch for the second writer, the add deferred",
          "[nn][graph]") {
  // 0 -> 1 conv, 2 conv, 3 add(1, 2, 0) -> 4 output. Layer 0 has three readers; it could absorb
  // a term, but the add's sum falls after step 2, not just before its own step.
  const dl::GradientRoutes g = dl::plan_gradient_routes(
      {{-1}, {0}, {0}, {1, 2, 0}, {3}},
      properties({false, false, false, true, false}, std::vector<bool>(5, false),
                 {true, false, false, true, false}));
  // The convolutions may rewrite their dy: the add copies its dy to them, no alias.
  CHECK(g.inputs[3][0].mode == Mode::kStraight);
  CHECK(g.inputs[3][1].mode == Mode::kStraight);
  CHECK(g.owner[1] == 1);
  CHECK(g.owner[2] == 2);
  // Layer 0's sum: 2 writes straight, 1 through scratch slot 0, the add's dy after step 2.
  CHECK(g.inputs[2][0].mode == Mode::kStraight);
  CHECK(g.inputs[1][0].mode == Mode::kScratch);
  CHECK(g.inputs[1][0].scratch_slot == 0);
  CHECK(has_sum(g, 1, 0, 0, -1));
  CHECK(has_sum(g, 2, 0, -1, 3));
  CHECK(g.absorbed[0] == -1);
  CHECK(g.first_write[0] == 2);
  CHECK(g.last_read[3] == 2);
  CHECK(g.scratch_slots == 1);
}

TEST_CASE("gradient routes: a layer read only by pass-through readers gets a copy and a sum",
          "[nn][graph]") {
  // 0 -> 1 add(0, 0) -> 2 output: the add writes its first input's gradient (a copy of its dy)
  // and its dy is added for the second.
  const dl::GradientRoutes g = dl::plan_gradient_routes(
      {{-1}, {0, 0}, {1}},
      properties({false, true, false}, {true, false, false}, std::vector<bool>(3, false)));
  CHECK(g.inputs[1][0].mode == Mode::kStraight);
  CHECK(g.inputs[1][1].mode == Mode::kInPlace);
  CHECK(has_sum(g, 1, 0, -1, 1));
  CHECK(g.owner[0] == 0);
}
