#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "data/dataset.hpp"
#include "data/input_pipeline.hpp"

namespace {

// One channel, 3x3: byte value = 10 * row + col.
const std::vector<std::uint8_t> kImage{0, 1, 2, 10, 11, 12, 20, 21, 22};

std::vector<float> transformed(const dl::InputPipeline& p, const dl::AugmentDraw* draw) {
  std::vector<float> out(kImage.size());
  dl::transform_sample(kImage.data(), 1, 3, 3, p, draw, out.data());
  return out;
}

std::vector<float> units(std::initializer_list<int> bytes) {
  std::vector<float> v;
  for (int b : bytes) v.push_back(static_cast<float>(b) / 255.0f);
  return v;
}

}  // namespace

TEST_CASE("transform_sample: a flip mirrors the columns", "[input_pipeline]") {
  dl::InputPipeline p;
  p.horizontal_flip = true;
  const dl::AugmentDraw flip{true, 0, 0};
  CHECK(transformed(p, &flip) == units({2, 1, 0, 12, 11, 10, 22, 21, 20}));
  const dl::AugmentDraw keep{false, 0, 0};
  CHECK(transformed(p, &keep) == units({0, 1, 2, 10, 11, 12, 20, 21, 22}));
}

TEST_CASE("transform_sample: a crop from the zero-padded image", "[input_pipeline]") {
  dl::InputPipeline p;
  p.crop_padding = 1;
  // Offsets (0, 0) of the 5x5 padded image: shifted down and right, zeros in from the top-left.
  const dl::AugmentDraw top_left{false, 0, 0};
  CHECK(transformed(p, &top_left) == units({0, 0, 0, 0, 0, 1, 0, 10, 11}));
  // Offsets (1, 1): the image itself.
  const dl::AugmentDraw centre{false, 1, 1};
  CHECK(transformed(p, &centre) == units({0, 1, 2, 10, 11, 12, 20, 21, 22}));
  // Offsets (2, 0), then flipped: crop rows 1..2 plus a zero row, columns -1..1, mirrored.
  const dl::AugmentDraw flipped{true, 2, 0};
  p.horizontal_flip = true;
  CHECK(transformed(p, &flipped) == units({11, 10, 0, 21, 20, 0, 0, 0, 0}));
}

TEST_CASE("transform_sample: per-channel normalization, padding included", "[input_pipeline]") {
  dl::InputPipeline p;
  p.mean = {0.5f};
  p.std = {0.25f};
  p.crop_padding = 1;
  const dl::AugmentDraw top_left{false, 0, 0};
  const std::vector<float> out = transformed(p, &top_left);
  CHECK(out[0] == (0.0f - 0.5f) / 0.25f);
  CHECK(out[8] == (11.0f / 255.0f - 0.5f) / 0.25f);
}

TEST_CASE("augmentation draws depend only on (seed, epoch, sample index)", "[input_pipeline]") {
  dl::InputPipeline p;
  p.crop_padding = 4;
  p.horizontal_flip = true;
  p.seed = 7;
  int flips = 0, differ = 0;
  for (std::int64_t i = 0; i < 200; ++i) {
    const dl::AugmentDraw a = dl::draw_augmentation(p, 3, i);
    const dl::AugmentDraw b = dl::draw_augmentation(p, 3, i);
    CHECK((a.flip == b.flip && a.dy == b.dy && a.dx == b.dx));
    CHECK((a.dy >= 0 && a.dy <= 8 && a.dx >= 0 && a.dx <= 8));
    const dl::AugmentDraw next = dl::draw_augmentation(p, 4, i);
    differ += (next.flip != a.flip || next.dy != a.dy || next.dx != a.dx) ? 1 : 0;
    flips += a.flip ? 1 : 0;
  }
  CHECK(flips > 60);
  CHECK(flips < 140);
  CHECK(differ > 150);
  p.horizontal_flip = false;
  for (std::int64_t i = 0; i < 50; ++i) CHECK_FALSE(dl::draw_augmentation(p, 3, i).flip);
}

TEST_CASE("channel statistics and their metadata text", "[input_pipeline]") {
  // Two samples of 2 channels x 1 pixel: channel 0 holds 0 and 255, channel 1 holds 51 twice.
  const dl::ChannelStats stats = dl::channel_stats({0, 51, 255, 51}, 2, 1);
  CHECK(stats.mean[0] == Approx(0.5));
  CHECK(stats.std[0] == Approx(0.5));
  CHECK(stats.mean[1] == Approx(0.2));
  CHECK(stats.std[1] == 1.0f);  // constant: divided by 1
  dl::InputPipeline p;
  p.mean = stats.mean;
  p.std = stats.std;
  dl::InputPipeline back;
  dl::parse_normalization(dl::format_normalization(p), back);
  CHECK(back.mean == p.mean);
  CHECK(back.std == p.std);
  CHECK_THROWS(dl::parse_normalization("0.5 x;1", back));
  CHECK_THROWS(dl::parse_normalization("0.5 0.2;1", back));
}

TEST_CASE("Dataset: gather_training without a pipeline is gather; with one, fixed per epoch",
          "[input_pipeline]") {
  std::vector<std::uint8_t> pixels(4 * 3 * 4 * 4);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 7);
  dl::Dataset data(3, 4, 4, pixels, {0, 1, 2, 3}, 4);
  const std::vector<std::int64_t> indices{3, 0, 2};
  std::vector<float> a(3 * 48), b(3 * 48);
  std::vector<std::int32_t> la(3), lb(3);
  data.gather(indices.data(), 3, a.data(), la.data());
  data.gather_training(indices.data(), 3, 5, b.data(), lb.data());
  CHECK(a == b);
  dl::InputPipeline p;
  p.crop_padding = 2;
  p.horizontal_flip = true;
  p.seed = 1;
  data.set_pipeline(p);
  data.gather_training(indices.data(), 3, 5, a.data(), la.data());
  // Sample 0 alone, later: the same bits as in the batch above (no dependence on the batch).
  std::vector<float> alone(48);
  data.gather_training(indices.data() + 1, 1, 5, alone.data(), lb.data());
  CHECK(std::vector<float>(a.begin() + 48, a.begin() + 96) == alone);
  data.gather_training(indices.data(), 3, 6, b.data(), lb.data());
  CHECK(a != b);
  // Evaluation batches are not augmented.
  data.gather(indices.data(), 3, b.data(), lb.data());
  dl::Dataset plain(3, 4, 4, pixels, {0, 1, 2, 3}, 4);
  std::vector<float> c(3 * 48);
  plain.gather(indices.data(), 3, c.data(), lb.data());
  CHECK(b == c);
}

TEST_CASE("Dataset: a pipeline normalizing another number of channels is refused",
          "[input_pipeline]") {
  // Three channel planes and a model file's one mean: gather read mean[1] and mean[2] past the
  // end of the list (garbage normalization, NaN probabilities); now the pipeline is refused.
  std::vector<std::uint8_t> pixels(2 * 3 * 4 * 4, 100);
  dl::Dataset data(3, 4, 4, pixels, {0, 1}, 2);
  dl::InputPipeline one;
  one.mean = {0.5f};
  one.std = {0.25f};
  CHECK_THROWS_AS(data.set_pipeline(one), dl::DataError);
  dl::InputPipeline three;
  three.mean = {0.5f, 0.4f, 0.3f};
  three.std = {0.25f, 0.25f, 0.25f};
  data.set_pipeline(three);
  const std::vector<std::int64_t> indices{1};
  std::vector<float> out(48);
  std::int32_t label = 0;
  data.gather(indices.data(), 1, out.data(), &label);
  CHECK(out[16] == (100.0f / 255.0f - 0.4f) / 0.25f);
}
