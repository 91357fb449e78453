// EventFileWriter: scalars in TensorBoard's event file format, so `tensorboard --logdir` shows a
// run's curves (training.report_to: [tensorboard]).
//
//   EventFileWriter events("out/runs");          // out/runs/events.out.tfevents.<time>.<host>.<pid>.unif
//   events.scalar("train/loss", 0.693, 10);      // tag, value, step
//   events.flush();
//
// The file is a sequence of TFRecords (length, masked CRC-32C of the length, data, masked CRC-32C of
// the data), each an `Event` protocol buffer: the first one holds file_version "brain.Event:2", each
// later one wall_time, step and a Summary with one simple_value. The few protobuf fields are
// encoded here (tensorflow/core/util/event.proto, summary.proto); no TensorFlow or protoc needed.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace unif::framework {

/// CRC-32C (Castagnoli), as TFRecord uses.
uint32_t crc32c(std::string_view data);
/// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(std::string_view data);

class EventFileWriter {
 public:
  /// Creates `dir` when missing and a new event file in it; UserError when it cannot.
  explicit EventFileWriter(const std::filesystem::path& dir);
  /// One scalar at `step` (wall time now). UserError when the file cannot be written.
  void scalar(std::string_view tag, double value, int64_t step);
  void flush();
  const std::filesystem::path& path() const { return path_; }

  /// The serialized Event of a scalar (exposed for tests).
  static std::string scalar_event(std::string_view tag, float value, int64_t step, double wall_time);
  /// One TFRecord around `data` (exposed for tests).
  static std::string record(std::string_view data);

 private:
  void write(const std::string& event);
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace unif::framework
