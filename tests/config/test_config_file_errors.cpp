// Config errors of the file as a whole: YAML syntax, an empty document or one that is not a map,
// a missing, unreadable, special or oversized file, and a file's errors naming the file. The
// errors of keys and values: test_config_errors.cpp.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "config_test_support.hpp"
#include "io/file_access.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using dl::testing::kNetwork;
using dl::testing::load;
using dl::testing::load_error;

TEST_CASE("YAML syntax errors carry yaml-cpp's place", "[config][errors]") {
  const std::string msg = load_error("seed: 1\n  bad: 2\n");
  CHECK_THAT(msg, StartsWith("t.yaml:2:6: YAML syntax error: "));
  CHECK_THAT(msg, Contains("; "));
}

TEST_CASE("YAML nested past the reader's depth guard is named as such", "[config][errors]") {
  // yaml-cpp's own message for it is "bad file", which names neither the cause nor the fix.
  const std::size_t levels = 600;
  const std::string brackets = "seed: " + std::string(levels, '[') + std::string(levels, ']') + "\n";
  const std::string flow = load_error(brackets);
  CHECK_THAT(flow, StartsWith("t.yaml:1:"));
  CHECK_THAT(flow, Contains("lists or maps nest here deeper than the YAML reader follows"));
  CHECK_THAT(flow, Contains("'[' or '{' opened and not closed"));
  std::string indented;
  for (std::size_t i = 0; i < levels; ++i) indented += std::string(i, ' ') + "a:\n";
  CHECK_THAT(load_error(indented), Contains("lists or maps nest here deeper"));
}

TEST_CASE("a syntax error's likelier cause is named where it is", "[config][errors]") {
  // A tab in the indentation: yaml-cpp says "illegal block entry".
  CHECK(load_error("seed: 1\nlayers:\n\t- dense: {nOut: 3}\n") ==
        "t.yaml:3:1: YAML syntax error: a tab indents this line, and YAML indents with spaces only "
        "(the YAML reader: illegal block entry); indent with spaces, two per level as in "
        "configs/mnist.yaml (an editor can turn tabs into spaces)");
  // A '{' left open: yaml-cpp names the next line.
  const std::string brace = load_error(
      "seed: 1\nupdater: {type: adam, learningRate: 0.1\n"
      "epochs: 2\n");
  CHECK_THAT(brace, StartsWith("t.yaml:2:10: YAML syntax error: the '{' opened here is not closed "
                               "before line 3 (the YAML reader: end of map flow not found); "
                               "close it with '}'"));
  CHECK_THAT(load_error("layers: [a, b\nseed: 1\n"),
             StartsWith("t.yaml:1:9: YAML syntax error: the '[' opened here"));
  // 'key:value': yaml-cpp names the next line.
  CHECK(load_error("seed:1\nepochs: 2\n") ==
        "t.yaml:1:5: YAML syntax error: 'seed:1' has no space after ':', so YAML reads it as one "
        "word, not as the key 'seed' (the YAML reader: illegal map value); write 'seed: 1'");
  // Where none of these is there, yaml-cpp's words and place stay.
  CHECK_THAT(load_error("seed: 1\n  epochs: 2\n"),
             StartsWith("t.yaml:2:9: YAML syntax error: illegal map value; "));
  // Valid YAML the scan must not take for a mistake: a tab inside a quoted value or a flow
  // collection, a bracket inside quotes or a comment, a flow map over two lines.
  const dl::Config ok = load(
      "seed: 1 # {not open\nbackend: 'cpu'\nupdater: {type: adam,\n"
      "\tlearningRate: 0.5}\n" +
      kNetwork);
  CHECK(ok.updater.learningRate == 0.5f);
}

TEST_CASE("a key written without the space after ':' is named as such", "[config][errors]") {
  // Valid YAML (a key of null value, last), one word as the key: the unknown key's message says
  // why. Before another key it is a syntax error (the case above).
  CHECK(load_error(kNetwork + "epochs:2\n") ==
        "t.yaml:6:1: unknown key 'epochs:2' at the top level: it has no space after ':', so YAML "
        "reads it as one word; put a space after 'epochs:'");
  CHECK_THAT(load_error("inputType: {feedForward: {size: 4}}\nlayers:\n  - dense:{nOut: 3}\n"),
             Contains("unknown layer type 'dense:{nOut' in layers.0: it has no space after ':'"));
}

TEST_CASE("an empty config or one that is not a map", "[config][errors]") {
  CHECK_THAT(load_error(""), StartsWith("t.yaml: the config is empty; "));
  CHECK_THAT(load_error("# only a comment\n"), StartsWith("t.yaml: the config is empty; "));
  const std::string list = load_error("- seed: 1\n- epochs: 2\n");
  CHECK_THAT(list, StartsWith("t.yaml:1:1: the top level of a config must be a map"));
  CHECK_THAT(list, Contains("got a list"));
  CHECK_THAT(load_error("hello\n"), Contains("got the single value 'hello'"));
  const std::string two = load_error("seed: 1\n---\nseed: 2\n");
  CHECK_THAT(two, StartsWith("t.yaml:3:1: the file holds 2 YAML documents"));
}

TEST_CASE("a stray token after the document is a syntax error, not an endless loop",
          "[config][errors]") {
  // yaml-cpp 0.7's LoadAll never returns on these (found by tests/fuzz/fuzz_config).
  CHECK_THAT(load_error("\"\","), StartsWith("t.yaml:1:3: YAML syntax error: unexpected token"));
  CHECK_THAT(load_error(kNetwork + "---\n,\n"), StartsWith("t.yaml:7:1: YAML syntax error: "));
  // An empty document after the config is no second config.
  CHECK(load(kNetwork + "---\n").layers.size() == 2);
}

TEST_CASE("a missing or unreadable config file", "[config][errors]") {
  const std::string path = "/nonexistent-dir/none.yaml";
  try {
    dl::load_config_file(path);
    FAIL("loading a missing file succeeded");
  } catch (const dl::ConfigError& e) {
    CHECK(std::string(e.what()) == path +
                                       ": cannot read config file (No such file or directory); "
                                       "check the path given to --config");
  }
  try {
    dl::load_config_file("/tmp");
    FAIL("loading a directory succeeded");
  } catch (const dl::ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "/tmp: is a directory, not a regular file; give --config the path of a YAML file");
  }
}

TEST_CASE("a config saved as UTF-16 is refused naming the encoding and the fix",
          "[config][errors]") {
  const std::string path = "/tmp/dl-train-test-utf16-" + std::to_string(::getpid()) + ".yaml";
  {
    std::ofstream out(path, std::ios::binary);
    // "seed: 1\n" as Windows Notepad's "Unicode": a byte order mark, then little-endian pairs.
    out << std::string(
        "\xFF\xFEs\0e\0e\0d\0:\0 \0"
        "1\0\n\0",
        18);
  }
  try {
    dl::load_config_file(path);
    FAIL("a UTF-16 config loaded");
  } catch (const dl::ConfigError& e) {
    CHECK(std::string(e.what()) ==
          path +
              ": is UTF-16LE text (as Windows saves \"Unicode\" text), but a config is read "
              "as UTF-8; save it as UTF-8 (an editor's \"Save as\" encoding, or iconv -f "
              "UTF-16LE -t UTF-8 FILE > NEW_FILE)");
  }
  std::remove(path.c_str());
}

TEST_CASE("a config that is a FIFO, a device or too big is refused before it is read",
          "[config][errors]") {
  char dir[] = "/tmp/dl-config-special-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string fifo = std::string(dir) + "/config.fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // Without a writer, opening the FIFO for reading would block forever.
  CHECK_THROWS_WITH(dl::load_config_file(fifo),
                    fifo +
                        ": is a FIFO (named pipe), not a regular file; give --config the path "
                        "of a YAML file");
  CHECK_THROWS_WITH(dl::load_config_file("/dev/zero"),
                    "/dev/zero: is a character device, not a regular file; give --config the "
                    "path of a YAML file");
  const std::string big = std::string(dir) + "/big.yaml";
  {
    std::ofstream out(big);
    out << "# " << std::string(dl::kMaxConfigBytes, 'x') << "\n";
  }
  CHECK_THROWS_WITH(dl::load_config_file(big),
                    big +
                        ": is 1048579 bytes, over the limit of 1048576 bytes (1 MiB) for a "
                        "config; give --config the path of a YAML file");
  CHECK_THROWS_AS(dl::load_config_file(big), dl::ConfigError);
  unlink(fifo.c_str());
  unlink(big.c_str());
  rmdir(dir);
}

TEST_CASE("a config file's errors name the file", "[config][errors]") {
  char name[] = "/tmp/dl-config-test-XXXXXX";
  const int fd = mkstemp(name);
  REQUIRE(fd >= 0);
  close(fd);
  {
    std::ofstream out(name);
    out << "epochs: 1\nbatchSize: many\n" << kNetwork;
  }
  try {
    dl::load_config_file(name);
    FAIL("an invalid file loaded");
  } catch (const dl::ConfigError& e) {
    CHECK_THAT(e.what(), StartsWith(std::string(name) + ":2:12: batchSize must be an integer"));
  }
  std::remove(name);
}

TEST_CASE("an alias in a cycle, or aliases that multiply the config, are refused where written",
          "[config][errors]") {
  // An alias inside the node it names made every walk of the config recurse until the stack ran
  // out (found by tests/fuzz/fuzz_config).
  const std::string cycle = load_error("seed: 1\nx: &a {b: *a}\n");
  CHECK(cycle ==
        "t.yaml:2:11: the alias stands for a node that contains it: a cycle, which no config "
        "value can hold; write the value out instead of the alias");
  CHECK_THAT(load_error("x: &a [1, [2, *a]]\n"), StartsWith("t.yaml:1:15: the alias stands for"));
  // Ten aliases of ten aliases of ...: a few hundred bytes for 10^9 values.
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) laughs += (k ? ", *a" : "*a") + std::to_string(i - 1);
    laughs += "]\n";
  }
  CHECK_THAT(load_error(laughs),
             StartsWith("t.yaml:6:") &&
                 Contains("the aliases expand the YAML to more than 1000000 values; write the "
                          "values out, or alias fewer of them"));
  // Aliases that neither cycle nor multiply much stay allowed: a layer's settings written once.
  const dl::Config c = load(
      "inputType: {feedForward: {size: 4}}\n"
      "layers:\n  - dense: &relu {nOut: 8, activation: relu}\n  - dense: *relu\n"
      "  - output: {nOut: 2}\n");
  REQUIRE(c.layers.size() == 3);
  CHECK(c.layers[1].nOut == 8);
}
