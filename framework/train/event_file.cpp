// EventFileWriter: see event_file.h.
#include "framework/train/event_file.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>

#include "framework/common/error.h"

namespace unif::framework {
namespace {

// Protocol buffer wire format: a key is (field << 3) | type; type 0 varint, 1 fixed64, 2 length
// delimited, 5 fixed32.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
template <class T>
void put_fixed(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out.append(bytes, sizeof(T));
}
void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : data) crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string EventFileWriter::record(std::string_view data) {
  std::string out, length;
  put_fixed<uint64_t>(length, data.size());
  out += length;
  put_fixed<uint32_t>(out, masked_crc32c(length));
  out.append(data);
  put_fixed<uint32_t>(out, masked_crc32c(data));
  return out;
}

std::string EventFileWriter::scalar_event(std::string_view tag, float value, int64_t step, double wall_time) {
  std::string summary_value;  // Summary.Value: tag = 1, simple_value = 2 (float)
  put_bytes(summary_value, 1, tag);
  put_varint(summary_value, 2 << 3 | 5);
  put_fixed<float>(summary_value, value);
  std::string summary;  // Summary: repeated Value value = 1
  put_bytes(summary, 1, summary_value);
  std::string event;  // Event: wall_time = 1 (double), step = 2 (int64), summary = 5
  put_varint(event, 1 << 3 | 1);
  put_fixed<double>(event, wall_time);
  put_varint(event, 2 << 3 | 0);
  put_varint(event, static_cast<uint64_t>(step));
  put_bytes(event, 5, summary);
  return event;
}

EventFileWriter::EventFileWriter(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw UserError("training.report_to: cannot create " + dir.string() + ": " + ec.message());
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  path_ = dir / ("events.out.tfevents." + std::to_string(static_cast<int64_t>(now_seconds())) + "." + host + "." +
                 std::to_string(::getpid()) + ".unif");
  out_.open(path_, std::ios::binary | std::ios::app);
  if (!out_) throw UserError("training.report_to: cannot write " + path_.string());
  std::string first;  // Event: wall_time = 1, file_version = 3
  put_varint(first, 1 << 3 | 1);
  put_fixed<double>(first, now_seconds());
  put_bytes(first, 3, "brain.Event:2");
  write(first);
  flush();
}

void EventFileWriter::write(const std::string& event) {
  out_ << record(event);
  if (!out_) throw UserError("training.report_to: cannot write " + path_.string());
}

void EventFileWriter::scalar(std::string_view tag, double value, int64_t step) {
  write(scalar_event(tag, static_cast<float>(value), step, now_seconds()));
}

void EventFileWriter::flush() {
  out_.flush();
  if (!out_) throw UserError("training.report_to: cannot write " + path_.string());
}

}  // namespace unif::framework
