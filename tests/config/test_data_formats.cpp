// The data format registry as the config sees it: data.format decides which keys the data
// section has (a key of another format is refused, naming the formats that have it), each
// format's keys round-trip through the dump, and each format's checks run at load.
#include "config_test_support.hpp"
#include "data/data_format.hpp"

using Catch::Matchers::Contains;
using dl::testing::check_same_config;
using dl::testing::kNetwork;
using dl::testing::load;
using dl::testing::load_error;

namespace {

const std::string kRgbNetwork =
    "inputType:\n"
    "  convolutionalFlat: {height: 32, width: 32, channels: 3}\n"
    "layers:\n"
    "  - convolution: {nOut: 4, kernelSize: 3}\n"
    "  - output: {nOut: 10}\n";

const std::string kDenseNetwork =
    "inputType: {feedForward: {size: 4}}\n"
    "layers:\n"
    "  - dense: {nOut: 8}\n"
    "  - output: {nOut: 3}\n";

}  // namespace

TEST_CASE("data formats: every format is registered under its name", "[config][data]") {
  CHECK(dl::data_format_names() ==
        std::vector<std::string>{"idx", "cifar10", "cifar100", "imagefolder", "csv"});
  for (const dl::DataFormatKind& kind : dl::data_formats()) {
    CHECK(dl::find_data_format(kind.name) == &dl::data_format(kind.format));
    CHECK(kind.check != nullptr);
    CHECK(kind.load != nullptr);
    CHECK(kind.predict.load != nullptr);
  }
  CHECK(dl::find_data_format("ImageFolder") != nullptr);  // any letter case
  CHECK(dl::formats_with_key("onBadFile") == std::vector<std::string>{"imagefolder", "csv"});
}

TEST_CASE("data formats: a key of another format is refused, naming its formats",
          "[config][data]") {
  CHECK_THAT(load_error("data: {directory: /d}\n" + kNetwork),
             Contains("data.directory is a key of data.format cifar10, cifar100, not of idx") &&
                 Contains("set data.format: cifar10, or remove directory"));
  CHECK_THAT(load_error("data: {format: imagefolder, trainImages: x.gz}\n" + kRgbNetwork),
             Contains("data.trainImages is a key of data.format idx, not of imagefolder"));
  CHECK_THAT(load_error("data: {format: parquet}\n" + kNetwork),
             Contains("unknown data format 'parquet'") && Contains("imagefolder, csv"));
  // The file type of the images: the format that reads them is named.
  CHECK_THAT(load_error("data: {format: jpeg}\n" + kNetwork),
             Contains("unknown data format 'jpeg' for data.format; write imagefolder"));
}

TEST_CASE("data formats: imagefolder and csv keys round-trip and are checked", "[config][data]") {
  const dl::Config folder = load(
      "data: {format: imagefolder, trainDirectory: /p/train, testDirectory: /p/test,\n"
      "       validationDirectory: /p/val, resize: stretch, onBadFile: skip}\n" +
      kRgbNetwork);
  CHECK(folder.data.format == dl::DataFormat::kImageFolder);
  CHECK(folder.data.resize == dl::ImageResize::kStretch);
  CHECK(folder.data.onBadFile == dl::BadFileAction::kSkip);
  const std::string dump = dl::dump_config_yaml(folder);
  CHECK_THAT(dump, Contains("trainDirectory: \"/p/train\"") && Contains("resize: stretch"));
  CHECK_THAT(dump, !Contains("trainImages") && !Contains("cifar100Labels"));
  check_same_config(folder, dl::load_config_string(dump, "dump.yaml"));
  CHECK(dl::load_config_string(dump, "dump.yaml").data.validationDirectory == "/p/val");
  CHECK_THAT(load_error("data: {format: imagefolder, validationDirectory: /v, validationSplit: "
                        "0.1}\n" +
                        kRgbNetwork),
             Contains("data.validationSplit and data.validationDirectory both name"));
  CHECK_THAT(load_error("data: {format: imagefolder}\n" +
                        std::string("inputType: {feedForward: {size: 4}}\n"
                                    "layers: [{output: {nOut: 10}}]\n")),
             Contains("data.format imagefolder gives images of 1 (grayscale) or 3 (RGB)"));

  const dl::Config csv = load(
      "data: {format: csv, trainFile: t.csv, testFile: s.csv, skipLines: 1, delimiter: ';',\n"
      "       labelIndex: 0, numClasses: 3}\n" +
      kDenseNetwork);
  CHECK(csv.data.delimiter == ";");
  CHECK(csv.data.labelIndex == 0);
  check_same_config(csv, dl::load_config_string(dl::dump_config_yaml(csv), "dump.yaml"));
  // A tab-separated file: "\t" is a delimiter (text fields refuse control characters), and it
  // reads back from the dump; the two characters \ and t, and a line end, are refused.
  const dl::Config tab =
      load("data: {format: csv, delimiter: \"\\t\", numClasses: 3}\n" + kDenseNetwork);
  CHECK(tab.data.delimiter == "\t");
  check_same_config(tab, dl::load_config_string(dl::dump_config_yaml(tab), "dump.yaml"));
  CHECK_THAT(load_error("data: {format: csv, delimiter: '\\t', numClasses: 3}\n" + kDenseNetwork),
             Contains("a backslash and a 't'") && Contains("write delimiter: \"\\t\""));
  CHECK_THAT(load_error("data: {format: csv, delimiter: \"\\n\", numClasses: 3}\n" + kDenseNetwork),
             Contains("data.delimiter is the control character '\\n'"));
  CHECK_THAT(load_error("data: {format: csv, labelIndex: 5, numClasses: 3}\n" + kDenseNetwork),
             Contains("data.labelIndex 5 is past the last field"));
  CHECK_THAT(load_error("data: {format: csv, labelIndex: -2, numClasses: 3}\n" + kDenseNetwork),
             Contains("data.labelIndex"));
  CHECK_THAT(load_error("data: {format: csv, numClasses: 3, deviceResident: always}\n" +
                        kDenseNetwork),
             Contains("data.deviceResident: always uploads pixels"));
}

TEST_CASE("data formats: imagefolder's cacheBytes is auto or a byte size", "[config][data]") {
  const std::string folder = "data: {format: imagefolder";
  const dl::Config automatic = load(folder + "}\n" + kRgbNetwork);
  CHECK_FALSE(automatic.data.cacheBytes.has_value());  // auto: the reader takes half the memory
  CHECK_THAT(dl::dump_config_yaml(automatic), Contains("cacheBytes: auto"));
  CHECK_FALSE(load(folder + ", cacheBytes: AUTO}\n" + kRgbNetwork).data.cacheBytes.has_value());
  const dl::Config sized = load(folder + ", cacheBytes: 512MiB}\n" + kRgbNetwork);
  CHECK(sized.data.cacheBytes == std::uint64_t{512} << 20);
  check_same_config(sized, dl::load_config_string(dl::dump_config_yaml(sized), "dump.yaml"));
  CHECK(dl::load_config_string(dl::dump_config_yaml(sized), "dump.yaml").data.cacheBytes ==
        sized.data.cacheBytes);
  CHECK_THAT(load_error(folder + ", cacheBytes: lots}\n" + kRgbNetwork),
             Contains("data.cacheBytes = 'lots'") && Contains("512MiB"));
  CHECK_THAT(load_error("data: {cacheBytes: 1GiB}\n" + kNetwork),
             Contains("data.cacheBytes is a key of data.format imagefolder, not of idx"));
}
