// A folder larger than data.cacheBytes is streamed (image_store.hpp): its batches, statistics and
// subsets are the bits of the same folder held whole, whether an image comes from the cache or
// its file, and the cache keeps no more images than it was given bytes for.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "data/batch_loader.hpp"
#include "data/epoch_plan.hpp"
#include "data/image_folder.hpp"
#include "data/parallel_for.hpp"
#include "idx_test_files.hpp"
#include "image_test_files.hpp"

using Catch::Matchers::Contains;

namespace {

constexpr int kSide = 12;
constexpr int kPerClass = 15;
constexpr int kCached = 5;  // images data.cacheBytes holds in the streamed reads

// Two class folders of gray PNGs (every one different) and JPEGs of another size.
void write_folder(const dl::test::TempDir& dir) {
  for (const char* name : {"a", "b"}) {
    std::filesystem::create_directories(dir.file(name));
    for (int i = 0; i < kPerClass; ++i) {
      const std::string stem = dir.file(std::string(name) + "/" + std::to_string(100 + i));
      if (i % 3 == 2) {
        dl::test::write_plain(stem + ".jpg", dl::test::encode_gray_jpeg(2 * kSide, kSide + i));
        continue;
      }
      const dl::test::Bytes pixels =
          dl::test::pattern_bytes(kSide * kSide, static_cast<std::uint32_t>(i + 31 * name[0]));
      dl::test::write_plain(stem + ".png", dl::test::encode_png(kSide, kSide, 1, pixels));
    }
  }
}

dl::ImageFolderRequest request(const dl::test::TempDir& dir, std::uint64_t cache_bytes) {
  dl::ImageFolderRequest r;
  r.directory = dir.file("");
  r.key = "data.trainDirectory";
  r.height = r.width = kSide;
  r.num_classes = 2;
  r.cache_bytes = cache_bytes;
  return r;
}

std::vector<float> gather_training(const dl::Dataset& data, const std::vector<std::int64_t>& order,
                                   int epoch) {
  std::vector<float> images(order.size() * data.sample_floats());
  std::vector<std::int32_t> labels(order.size());
  data.gather_training(order.data(), order.size(), epoch, images.data(), labels.data());
  for (std::size_t i = 0; i < order.size(); ++i)
    CHECK(labels[i] == data.labels()[static_cast<std::size_t>(order[i])]);
  return images;
}

}  // namespace

TEST_CASE("image store: a streamed folder gathers the bits of the held folder", "[image]") {
  const dl::test::TempDir dir;
  write_folder(dir);
  dl::Dataset held = dl::read_image_folder(request(dir, UINT64_MAX));
  dl::Dataset streamed = dl::read_image_folder(request(dir, kCached * kSide * kSide + 7));
  REQUIRE_FALSE(held.streamed());
  REQUIRE(streamed.streamed());
  CHECK(streamed.pixels().empty());
  CHECK(streamed.labels() == held.labels());
  CHECK(streamed.store()->cache_capacity() == kCached);
  CHECK_THAT(held.origin().holding, Contains("30 images decoded before training"));
  CHECK_THAT(streamed.origin().holding,
             Contains("30 images streamed") && Contains("up to 5 of them kept decoded"));

  // The threads a loader starts, which a run starts once before it claims its directory: the
  // prefetch thread, and for the streamed folder the decoders of one batch (this thread is one).
  const std::vector<std::string> held_threads = dl::batch_loader_threads(held, 2, 8, 3);
  CHECK(held_threads == std::vector<std::string>{"worker 3's batch prefetch thread"});
  CHECK(dl::batch_loader_threads(held, 0, 8, 3).empty());
  const std::vector<std::string> streamed_threads = dl::batch_loader_threads(streamed, 0, 8, 3);
  CHECK(streamed_threads.size() == dl::data_reader_threads(8) - 1);
  if (!streamed_threads.empty())
    CHECK(streamed_threads.back() == dl::data_reader_thread_name(dl::data_reader_threads(8) - 1));
  CHECK(dl::batch_loader_threads(streamed, 2, 1, 0) ==
        std::vector<std::string>{"worker 0's batch prefetch thread"});

  const dl::ChannelStats held_stats = held.channel_stats();
  const dl::ChannelStats streamed_stats = streamed.channel_stats();
  CHECK(streamed_stats.mean == held_stats.mean);
  CHECK(streamed_stats.std == held_stats.std);

  dl::InputPipeline pipeline;
  pipeline.seed = 9;
  pipeline.crop_padding = 2;
  pipeline.horizontal_flip = true;
  pipeline.mean = held_stats.mean;
  pipeline.std = held_stats.std;
  held.set_pipeline(pipeline);
  streamed.set_pipeline(pipeline);
  std::vector<std::int64_t> order(static_cast<std::size_t>(held.size()));
  std::iota(order.rbegin(), order.rend(), 0);  // the cache's entries last in the first epoch
  for (int epoch = 0; epoch < 2; ++epoch)      // the second epoch takes the cached ones from memory
    CHECK(gather_training(streamed, order, epoch) == gather_training(held, order, epoch));
  CHECK(streamed.store()->cached() == kCached);

  const std::vector<std::int64_t> picked = {29, 3, 17, 0, 4};
  const dl::Dataset held_part = held.subset(picked);
  const dl::Dataset streamed_part = streamed.subset(picked);
  REQUIRE(streamed_part.streamed());
  const std::vector<std::int64_t> all = {4, 0, 2, 1, 3};
  CHECK(gather_training(streamed_part, all, 1) == gather_training(held_part, all, 1));
  CHECK(streamed_part.content_hash() != streamed.content_hash());
  CHECK(streamed_part.content_hash() ==
        dl::read_image_folder(request(dir, 0)).subset(picked).content_hash());
}

TEST_CASE("image store: a file broken after listing stops the gather, naming it", "[image]") {
  const dl::test::TempDir dir;
  write_folder(dir);
  const dl::Dataset streamed = dl::read_image_folder(request(dir, 0));
  REQUIRE(streamed.streamed());
  const std::string broken = dir.file("b/101.png");
  dl::test::write_plain(broken, dl::test::Bytes(40, 0x89));
  const std::int64_t index = kPerClass + 1;  // b/101.png: the second file of the second class
  std::vector<float> images(streamed.sample_floats());
  std::int32_t label = 0;
  try {
    streamed.gather(&index, 1, images.data(), &label);
    FAIL("a broken file was gathered");
  } catch (const dl::DataError& e) {
    CHECK_THAT(e.what(), Contains(broken + ": ") && Contains("data.onBadFile: skip"));
  }
}

TEST_CASE("image store: a worker's loader decodes its own samples only", "[image]") {
  const dl::test::TempDir dir;
  write_folder(dir);
  // Room for all but one image: whatever the loader decodes below the last entry stays cached,
  // so the cache's count is the number of distinct images it decoded there.
  const std::uint64_t all_but_one = (2 * kPerClass - 1) * kSide * kSide;
  const dl::Dataset streamed = dl::read_image_folder(request(dir, all_but_one));
  REQUIRE(streamed.streamed());
  auto plan = std::make_shared<const dl::EpochPlan>(streamed.size(), 4, 2, 5, 0, true);
  std::size_t own = 0;  // worker 1's samples among the cache's entries
  for (std::int64_t round = 0; round < plan->rounds(); ++round) {
    const dl::EpochPlan::Slice slice = plan->batch(round, 1);
    for (std::size_t i = 0; i < slice.count; ++i) own += slice.indices[i] < 2 * kPerClass - 1;
  }
  dl::BatchLoader loader(streamed, plan, 1, 0, 2);
  std::int64_t rounds = 0;
  while (loader.next() != nullptr) ++rounds;
  CHECK(rounds == plan->rounds());
  CHECK(own < static_cast<std::size_t>(streamed.size()) / 2 + 4);
  CHECK(streamed.store()->cached() == own);
}

TEST_CASE("image folder: Windows', macOS's and hidden metadata files are no samples", "[image]") {
  const dl::test::TempDir dir;
  write_folder(dir);
  const dl::test::Bytes junk{'j', 'u', 'n', 'k'};
  for (const char* name :
       {"a/Thumbs.db", "b/desktop.ini", "a/ehthumbs.db", "b/DESKTOP.INI", "a/.DS_Store"})
    dl::test::write_plain(dir.file(name), junk);
  // A zip made on macOS unpacks a __MACOSX folder of resource forks beside the classes.
  std::filesystem::create_directories(dir.file("__MACOSX/a"));
  dl::test::write_plain(dir.file("__MACOSX/a/._1.png"), junk);
  // Under onBadFile: stop (the default) any other file that is no image stops the read.
  const dl::Dataset data = dl::read_image_folder(request(dir, UINT64_MAX));
  CHECK(data.size() == 2 * kPerClass);
  CHECK(data.origin().class_names == std::vector<std::string>{"a", "b"});
  CHECK(data.origin().skipped.empty());
  dl::test::write_plain(dir.file("a/notes.txt"), junk);
  CHECK_THROWS_WITH(dl::read_image_folder(request(dir, UINT64_MAX)),
                    Contains("notes.txt: is not an image"));
}

// eval --predictions names each test example's file: a subset (a validation split) keeps each
// sample's own name, held or streamed.
TEST_CASE("image folder: named files follow their samples into a subset", "[image]") {
  const dl::test::TempDir dir;
  write_folder(dir);
  const std::vector<std::int64_t> picked = {29, 3, 17, 0};
  const std::vector<std::string> expected = {"b/114.jpg", "a/103.png", "b/102.jpg", "a/100.png"};
  for (const std::uint64_t cache_bytes : {std::uint64_t{1} << 30, std::uint64_t{0}}) {
    INFO("cacheBytes " << cache_bytes);
    dl::ImageFolderRequest r = request(dir, cache_bytes);
    r.name_files = true;
    const dl::Dataset set = dl::read_image_folder(r);
    CHECK(set.streamed() == (cache_bytes == 0));
    const dl::SampleSources& all = set.origin().sample_sources;
    CHECK(all.column == "file");
    REQUIRE(all.names.size() == static_cast<std::size_t>(set.size()));
    const dl::Dataset subset = set.subset(picked);
    const dl::SampleSources& part = subset.origin().sample_sources;
    CHECK(part.column == "file");
    CHECK(part.names == expected);
  }
  CHECK(dl::read_image_folder(request(dir, 0)).origin().sample_sources.names.empty());
}
