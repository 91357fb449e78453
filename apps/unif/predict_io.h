// `unif predict`'s input and output ends, shared by every task.
//
// PredictInput opens `--input` (`-` = standard input; a missing path or a directory is a
// UserError) and reads it through its own buffer, so it can tell whether another line is already
// there (line_ready): a pipe or terminal (interactive()) is answered batch by batch as lines come.
//
// PredictOutput opens `--output`: standard output for `-` or none; a regular file (or a path that
// does not exist yet) through PATH.tmp renamed into place by commit(), beside the file a symlink
// points to, so the link stays a link; anything else (a FIFO, a character device, standard output
// reached through /dev/stdout or /proc/self/fd) written in place. Whatever ends it before commit(),
// an error or SIGINT / SIGTERM, no .tmp file stays behind.
#pragma once
#include <filesystem>
#include <fstream>
#include <istream>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/data/records.h"
#include "framework/inference/predictor.h"

namespace unif::app {

/// One input line: its record (fields null for a blank line), or `error` when it is bad (the
/// message names the input and line).
struct PredictLine {
  framework::Record record;
  std::string error;
};

class PredictInput {
 public:
  explicit PredictInput(const std::string& input);
  ~PredictInput();
  PredictInput(const PredictInput&) = delete;
  PredictInput& operator=(const PredictInput&) = delete;

  std::istream& stream() { return stream_; }
  const std::string& name() const { return name_; }  // "stdin" or the path, for messages
  /// The record format (the file name's extension; JSONL for standard input and unknown ones).
  framework::RecordFormat format() const { return format_; }
  /// Not a regular file: a pipe, a terminal, a socket.
  bool interactive() const { return interactive_; }
  /// Whether reading the next line may start without waiting: a whole line is buffered, or the
  /// input has data (or its end) ready now.
  bool line_ready();

 private:
  class Buffer;
  int fd_ = -1;
  bool owns_fd_ = false;
  std::string name_;
  framework::RecordFormat format_ = framework::RecordFormat::Jsonl;
  bool interactive_ = false;
  std::unique_ptr<Buffer> buffer_;
  std::istream stream_;
};

class PredictOutput {
 public:
  explicit PredictOutput(const std::string& output);
  ~PredictOutput();
  PredictOutput(const PredictOutput&) = delete;
  PredictOutput& operator=(const PredictOutput&) = delete;

  std::ostream& stream() { return *out_; }
  /// Flushes; UserError when the write failed.
  void flush();
  /// Ends a successful run: closes and moves PATH.tmp into place (UserError if that fails).
  void commit();

 private:
  std::string shown_;          // the output as messages name it
  std::filesystem::path tmp_;  // set while a temporary file exists
  std::filesystem::path target_;
  std::ofstream file_;
  std::ostream* out_ = nullptr;
};

/// Reads, answers and writes every line of `in` with `predictor` (`unif predict`, `unif embed`): a
/// regular file in chunks, a pipe or terminal batch by batch as its lines arrive. A bad line: the
/// answers before it are written, then UserError (or its error object, with keep_going). Progress
/// on long inputs goes to standard error as "<command>: N lines in S s".
void predict_lines(PredictInput& in, PredictOutput& out, const Predictor& predictor, int64_t batch_size,
                   bool keep_going, const framework::RecordFields& fields, const char* command);

}  // namespace unif::app
