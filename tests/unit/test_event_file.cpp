// TensorBoard event files (framework/train/event_file): CRC-32C against its published check value,
// the TFRecord framing, and a scalar Event's bytes as protobuf encodes them. Reading the files back
// with TensorBoard's own reader is tests/regression/test_eval_report.sh.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "framework/common/error.h"
#include "framework/train/event_file.h"

using namespace unif::framework;
namespace fs = std::filesystem;

TEST_CASE("event files: CRC-32C and TFRecord framing", "[unit][event_file]") {
  CHECK(crc32c("123456789") == 0xE3069283u);  // the CRC-32C check value (RFC 3720 B.4)
  CHECK(crc32c("") == 0u);
  const std::string rec = EventFileWriter::record("abc");
  REQUIRE(rec.size() == 8 + 4 + 3 + 4);
  uint64_t length = 0;
  std::memcpy(&length, rec.data(), 8);
  CHECK(length == 3);
  uint32_t crc = 0;
  std::memcpy(&crc, rec.data() + 8, 4);
  CHECK(crc == masked_crc32c(rec.substr(0, 8)));
  CHECK(rec.substr(12, 3) == "abc");
  std::memcpy(&crc, rec.data() + 15, 4);
  CHECK(crc == masked_crc32c("abc"));
}

TEST_CASE("event files: a scalar Event's protobuf bytes", "[unit][event_file]") {
  const std::string e = EventFileWriter::scalar_event("loss", 0.5f, 300, 2.0);
  // wall_time (field 1, fixed64 double 2.0), step (field 2, varint 300 = ac 02), summary (field 5)
  // { value (field 1) { tag (field 1) "loss", simple_value (field 2, fixed32 float 0.5) } }.
  const std::string expected = std::string("\x09\x00\x00\x00\x00\x00\x00\x00\x40", 9) + "\x10\xac\x02" + "\x2a\x0d" +
                               "\x0a\x0b" + "\x0a\x04loss" + std::string("\x15\x00\x00\x00\x3f", 5);
  CHECK(e == expected);
}

TEST_CASE("event files: a writer's file starts with the version event; unwritable dirs are user errors",
          "[unit][event_file][bad-input]") {
  const fs::path dir = fs::temp_directory_path() / ("unif_events_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    EventFileWriter w(dir / "runs");
    w.scalar("train/loss", 1.25, 1);
    w.flush();
    std::ifstream in(w.path(), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    const std::string bytes = s.str();
    CHECK(bytes.find("brain.Event:2") != std::string::npos);
    CHECK(bytes.find("train/loss") != std::string::npos);
    CHECK(w.path().filename().string().rfind("events.out.tfevents.", 0) == 0);
  }
  std::ofstream(dir / "file") << "x";
  CHECK_THROWS_AS(EventFileWriter(dir / "file" / "runs"), unif::UserError);
  fs::remove_all(dir);
}
