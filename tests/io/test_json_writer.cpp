// The one JSON writer: valid JSON whatever the values (non-finite numbers, quotes, control
// characters, invalid UTF-8), numbers that read back exactly, the format version, both layouts.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "io/json_writer.hpp"

TEST_CASE("JSON writer: non-finite numbers are null and the text parses strictly", "[json]") {
  dl::Json record = dl::versioned_json_object();
  record["loss"] = std::numeric_limits<double>::infinity();
  record["score"] = std::numeric_limits<double>::quiet_NaN();
  record["low"] = -std::numeric_limits<double>::infinity();
  for (const std::string& text : {dl::json_line(record), dl::json_document(record)}) {
    INFO(text);
    dl::Json parsed;
    REQUIRE(dl::parse_json(text, parsed));
    CHECK(parsed["format_version"] == dl::kJsonFormatVersion);
    CHECK(parsed["loss"].is_null());
    CHECK(parsed["score"].is_null());
    CHECK(parsed["low"].is_null());
  }
  CHECK(dl::json_line(record) ==
        "{\"format_version\":1,\"loss\":null,\"score\":null,\"low\":null}");
}

TEST_CASE("JSON writer: strings are escaped, invalid UTF-8 replaced", "[json]") {
  dl::Json record = dl::Json::object();
  record["details"] = std::string("a \"quoted\"\\path\n\ttab \x01 and \xff\xfe bytes");
  dl::Json parsed;
  REQUIRE(dl::parse_json(dl::json_line(record), parsed));
  const std::string details = parsed["details"].get<std::string>();
  CHECK(details.rfind("a \"quoted\"\\path\n\ttab \x01 and ", 0) == 0);
  CHECK(details.find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD for the bad bytes
}

TEST_CASE("JSON writer: numbers in the shortest form that reads back exactly", "[json]") {
  dl::Json record = dl::Json::object();
  record["third"] = 1.0 / 3.0;
  record["scale"] = 16384.0;
  record["tiny"] = 5e-324;
  record["count"] = std::int64_t{1} << 62;
  const std::string line = dl::json_line(record);
  CHECK(line ==
        "{\"third\":0.3333333333333333,\"scale\":16384,\"tiny\":5e-324,"
        "\"count\":4611686018427387904}");
  dl::Json parsed;
  REQUIRE(dl::parse_json(line, parsed));
  CHECK(parsed["third"].get<double>() == 1.0 / 3.0);  // bit-exact
  CHECK(parsed["tiny"].get<double>() == 5e-324);
}

TEST_CASE("JSON writer: a document has one key per line, values on their line", "[json]") {
  dl::Json document = dl::versioned_json_object();
  document["stopped_by"] = "completed";
  document["loss_scaling"] = dl::Json{{"mode", "dynamic"}, {"final_scale", 1024.0}};
  document["scores"] = dl::Json::array({1, 2});
  CHECK(dl::json_document(document) ==
        "{\n  \"format_version\": 1,\n  \"stopped_by\": \"completed\",\n"
        "  \"loss_scaling\": {\"mode\": \"dynamic\", \"final_scale\": 1024},\n"
        "  \"scores\": [1, 2]\n}\n");
  dl::Json parsed;
  CHECK_FALSE(dl::parse_json("{\"cut\": 1", parsed));
  CHECK(dl::json_document(dl::Json::object()) == "{}\n");
}
