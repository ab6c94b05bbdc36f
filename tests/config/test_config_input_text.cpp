// What a config may hold besides its keys: no explicit YAML tags, one document, no control
// characters, strings in UTF-8 that read back from the resolved dump as they were; and how
// messages quote what the user wrote (one line, clipped).
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "config/config_loader.hpp"
#include "config_test_support.hpp"
#include "core/message_text.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;
using dl::testing::check_same_config;
using dl::testing::kNetwork;
using dl::testing::load;
using dl::testing::load_error;

namespace {

bool one_line(const std::string& message) {
  return message.find('\n') == std::string::npos && message.find('\r') == std::string::npos;
}

}  // namespace

TEST_CASE("an explicit YAML tag is refused wherever it is written", "[config][errors][text]") {
  const std::string str = load_error("epochs: !!str 3\n" + kNetwork);
  CHECK_THAT(str, StartsWith("t.yaml:1:9: epochs carries the YAML tag '!!str'"));
  CHECK_THAT(str, Contains("; remove the tag"));
  CHECK_THAT(load_error("seed: !!int 3\n" + kNetwork),
             StartsWith("t.yaml:1:7: seed carries the YAML tag '!!int'"));
  CHECK_THAT(load_error("seed: !foo 3\n" + kNetwork), Contains("seed carries the YAML tag '!foo'"));
  // On a key, a section, a list item, deep in a layer.
  CHECK_THAT(load_error("!!str seed: 3\n" + kNetwork), Contains("seed carries the YAML tag"));
  CHECK_THAT(load_error("updater: !!map {type: adam}\n" + kNetwork),
             Contains("updater carries the YAML tag '!!map'"));
  CHECK_THAT(load_error(kNetwork + "data: {channelMean: [!!float 1]}\n"),
             Contains("data.channelMean.0 carries the YAML tag '!!float'"));
  CHECK_THAT(load_error("inputType: {feedForward: {size: 4}}\n"
                        "layers:\n  - output: {nOut: !!int 2}\n"),
             Contains("t.yaml:3:20: layers.0.output.nOut carries the YAML tag '!!int'"));
  // Quotes make a string without a tag; the non-specific tag '!' means the same.
  CHECK(load("output: {directory: \"3\"}\n" + kNetwork).output.directory == "3");
  CHECK(load("output: {directory: ! 3}\n" + kNetwork).output.directory == "3");
}

TEST_CASE("a --set value is held to the same rules as the file", "[config][errors][text]") {
  CHECK_THAT(load_error(kNetwork, {"epochs=!!str 3"}),
             StartsWith("--set epochs=!!str 3: the value carries the YAML tag '!!str'"));
  CHECK_THAT(load_error(kNetwork, {"updater={type: !custom adam}"}),
             Contains("the value at type carries the YAML tag '!custom'"));
  const std::string two = load_error(kNetwork, {"epochs=3\n---\n4"});
  CHECK_THAT(two, StartsWith("--set epochs=3\\n---\\n4: the value holds 2 YAML documents"));
  CHECK(one_line(two));
  CHECK(load_error(kNetwork, {"data=&d {x: *d}"}) ==
        "--set data=&d {x: *d}: the alias stands for a node that contains it: a cycle, which no "
        "config value can hold; write the value out instead of the alias");
  CHECK_THAT(load_error(kNetwork, {"output.directory=a\x01z"}),
             Contains("the value holds the control character \\x01"));
  // A comment would drop the rest of the value; quoted, '#' is the value's own.
  CHECK_THAT(load_error(kNetwork, {"data.trainImages=/a #1/x"}),
             Contains("the value holds ' #', where YAML starts a comment") &&
                 Contains("quote the value"));
  CHECK_THAT(load_error(kNetwork, {"epochs=3 # three"}), Contains("starts a comment"));
  // '|' alone is a YAML block scalar: a delimiter of '|' read as '' (0 bytes).
  CHECK(load_error(kNetwork, {"data.delimiter=|"}) ==
        "--set data.delimiter=|: the value '|' alone starts a YAML block scalar, which reads as "
        "nothing; quote it: --set 'data.delimiter=\"|\"'");
  CHECK(load(kNetwork, {"data.format=csv", "data.delimiter=\"|\""}).data.delimiter == "|");
  CHECK(load(kNetwork, {"data.trainImages=\"/a #1/x\""}).data.trainImages == "/a #1/x");
  CHECK(load(kNetwork, {"data.trainImages=/a#1/x"}).data.trainImages == "/a#1/x");
  CHECK(load(kNetwork, {"data.trainImages='it''s #1'"}).data.trainImages == "it's #1");
  // One document closed by '---' or '...' is one value.
  CHECK(load(kNetwork, {"epochs=4\n..."}).epochs == 4);
}

TEST_CASE("control characters: refused in the text and in string values, on one line",
          "[config][errors][text]") {
  const std::string nul = load_error(std::string("seed: 1\n\0\n", 10) + kNetwork);
  CHECK_THAT(nul, StartsWith("t.yaml:2:1: the config holds the control character \\x00"));
  CHECK(one_line(nul));
  CHECK_THAT(load_error("seed: 1\x1b[2J\n" + kNetwork),
             StartsWith("t.yaml:1:8: the config holds the control character \\x1b"));
  // Written as escapes in a quoted string, they reach the value: a path would be cut at the NUL.
  const std::string path = load_error(kNetwork + "output: {directory: \"runs/a\\0b\"}\n");
  CHECK_THAT(path, StartsWith("t.yaml:6:21: output.directory = 'runs/a\\x00b' holds the control "
                              "character \\x00 (byte 6)"));
  CHECK_THAT(load_error(kNetwork + "data: {trainImages: \"a\\nb\"}\n"),
             Contains("data.trainImages = 'a\\nb' holds the control character \\n"));
  CHECK_THAT(load_error(kNetwork + "data: {testImages: \"a\\u0085b\"}\n"),
             Contains("holds the control character \\u0085"));
  CHECK_THAT(load_error("inputType: {feedForward: {size: 4}}\n"
                        "layers:\n  - output: {nOut: 2, name: \"x\\ty\"}\n"),
             Contains("layers.0.name = 'x\\ty' holds the control character \\t"));
  // A tab between tokens is YAML whitespace, not a value's.
  CHECK(load("seed:\t5\n" + kNetwork).seed == 5);
}

TEST_CASE("a string that is not UTF-8 is refused, naming the key and the fix",
          "[config][errors][text]") {
  const std::string msg = load_error(kNetwork + "output: {directory: runs/\xff\xfe}\n");
  CHECK_THAT(msg, StartsWith("t.yaml:6:21: output.directory = 'runs/\\xff\\xfe' is not UTF-8 "
                             "(byte 5 is \\xff)"));
  CHECK_THAT(msg, Contains("symbolic link with a UTF-8 name"));
  CHECK_THAT(load_error(kNetwork, {"data.trainImages=d\xc3/x.gz"}),
             StartsWith("--set data.trainImages=d\\xc3/x.gz: data.trainImages = 'd\\xc3/x.gz' is "
                        "not UTF-8"));
  // A surrogate's encoding and an overlong '/' are not UTF-8 either.
  CHECK_THAT(load_error(kNetwork, {"output.directory=a\xed\xa0\x80"}), Contains("is not UTF-8"));
  CHECK_THAT(load_error(kNetwork, {"output.directory=a\xc0\xaf"}), Contains("is not UTF-8"));
}

TEST_CASE("every string the config holds reads back from the resolved dump as it was",
          "[config][dump][text]") {
  const std::vector<std::string> texts = {"data/ünïcødé/日本/🙂.gz",
                                          "with \"quotes\" and 'apostrophes'",
                                          "back\\slash\\n",
                                          "  leading and trailing  ",
                                          "# not a comment",
                                          "key: value",
                                          "null",
                                          "~",
                                          "123",
                                          "true",
                                          "- item",
                                          "[0, 1]",
                                          "{a: b}",
                                          "&anchor *alias",
                                          "!tag",
                                          "%directive",
                                          "@at `tick`",
                                          "line\u2028separator",
                                          "\u00a0nbsp",
                                          "---",
                                          "..."};
  for (const std::string& text : texts) {
    INFO(text);
    dl::Config c = load(kNetwork);
    c.output.directory = text;
    c.data.trainImages = text;
    c.layers[0].name = text;
    const dl::Config again = dl::load_config_string(dl::dump_config_yaml(c), "dump.yaml");
    check_same_config(c, again);
    CHECK(again.output.directory == text);
  }
}

TEST_CASE("quoted user text is one line and clipped, with its length", "[config][errors][text]") {
  const std::string big(100000, 'x');
  const std::string msg = load_error(kNetwork, {"epochs=" + big});
  CHECK(msg.size() < 400);
  CHECK_THAT(msg, StartsWith("--set epochs=xxx"));
  CHECK_THAT(msg, Contains("xxx...xxx"));
  CHECK_THAT(msg, Contains("xxx (100007 bytes): epochs must be an integer"));
  CHECK_THAT(msg, Contains("got 'xxx"));
  CHECK_THAT(msg, Contains("xxx (100000 bytes)'"));
  // A long key: clipped where it is quoted; the message then lists the valid keys.
  CHECK_THAT(load_error(kNetwork, {big + "=3"}), Contains("xxx (100000 bytes)' at the top level"));
  CHECK(load_error(kNetwork, {big + "=3"}).size() < 1000);
  CHECK(load_error(kNetwork, {"updater.type=" + big}).size() < 400);
  CHECK(load_error(kNetwork + "layers: [" + big).size() < 400);

  CHECK(dl::quoted_value("short") == "short");
  CHECK(dl::quoted_value("a\nb\tc\rd\x7f") == "a\\nb\\tc\\rd\\x7f");
  // Escaping twice changes nothing: a backslash stays as it is.
  CHECK(dl::quoted_value(dl::quoted_value("a\nb")) == "a\\nb");
  // What a terminal shows as nothing or a plain space is escaped too ('6.77' that is no number):
  // a byte order mark, a zero-width space, a no-break space, a direction mark; other non-ASCII
  // characters stay.
  CHECK(dl::quoted_value("\xef\xbb\xbf"
                         "6.77") == "\\ufeff6.77");
  CHECK(dl::quoted_value("1\xe2\x80\x8b.39") == "1\\u200b.39");
  CHECK(dl::quoted_value("2\xc2\xa0") == "2\\u00a0");
  CHECK(dl::quoted_value("a\xe2\x80\x8f"
                         "b") == "a\\u200fb");
  CHECK(dl::quoted_value("caf\xc3\xa9 \xe4\xb8\xad") == "caf\xc3\xa9 \xe4\xb8\xad");
  CHECK(dl::quoted_value(dl::quoted_value("\xef\xbb\xbf")) == "\\ufeff");
  // A clipped path keeps its end (the file name) and does not split a UTF-8 character.
  const std::string path = "/" + std::string(300, 'd') + "/é/train-images.gz";
  const std::string shown = dl::quoted_path(path);
  CHECK_THAT(shown, EndsWith("/é/train-images.gz (" + std::to_string(path.size()) + " bytes)"));
  CHECK_THAT(shown, StartsWith("/ddd"));
  CHECK(dl::message_text::find_non_utf8(shown) == std::string::npos);
  const std::string accents(200, 'x');
  CHECK(dl::message_text::find_non_utf8(dl::quoted_value(accents + "ééééééééééééééééééé")) ==
        std::string::npos);
  // Every typed error is one line, whatever its message held.
  CHECK(std::string(dl::ConfigError("a\nb").what()) == "a\\nb");
  // ... and of bounded length, keeping its beginning and its fix, even when a reader quoted a
  // value unclipped: standard error drops a message it cannot take, which left "dl-train: " alone.
  const std::string huge = "data.csv: line 3: field 1 ('" + std::string(10000000, '1') +
                           "') is not a finite number; fix the row";
  const std::string bounded = dl::DataError(huge).what();
  CHECK(bounded.size() <= dl::message_text::kMaxMessageBytes + 32);
  CHECK_THAT(bounded, StartsWith("data.csv: line 3: field 1 ('111"));
  CHECK_THAT(bounded, Contains("') is not a finite number; fix the row (10000066 bytes)"));
}

TEST_CASE("a carriage return alone (old Mac line ends) is refused at its place, naming the fix",
          "[config][errors][text]") {
  // yaml-cpp reads such a file as one line: it was "the config is empty" (its first comment), or
  // a value that swallowed the next lines.
  std::string mac = "# a comment\nseed: 1\n" + kNetwork;
  for (char& c : mac)
    if (c == '\n') c = '\r';
  const std::string msg = load_error(mac);
  CHECK_THAT(msg, StartsWith("t.yaml:1:12: a line ends with a carriage return alone"));
  CHECK_THAT(msg, EndsWith("save the file with LF (or CRLF) line ends"));
  CHECK_THAT(load_error("seed: 1\repochs: 2\n" + kNetwork), StartsWith("t.yaml:1:8: a line ends"));
  // CRLF line ends (a Windows editor) are read as they always were.
  std::string windows;
  for (const char c : "seed: 7\n" + kNetwork)
    windows += c == '\n' ? std::string("\r\n") : std::string(1, c);
  CHECK(dl::load_config_string(windows, "t.yaml").seed == 7);
}
