// RunLog: what a run tells its user — train.log and the console through one spdlog logger, the
// progress line on a terminal, and metrics.jsonl. Only the writer (rank 0) writes files; other
// ranks log warnings to stderr, prefixed with their rank. On a terminal the step lines overwrite
// each other on one line (train.log still gets each), and every other message first clears it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "framework/train/event_file.h"

namespace unif::framework {

/// "1.235" (4 significant digits), as every number in the log.
std::string fmt_num(double v, int precision = 4);
/// "1h02m03s", "4m05s", "7s"; "?" when unknown.
std::string fmt_duration(double seconds);

class RunLog {
 public:
  /// `rank` < 0: a single-process run. The writer logs to stderr and `dir`/train.log.
  RunLog(const std::filesystem::path& dir, bool writer, int rank);

  template <class... Args>
  void info(fmt::format_string<Args...> f, Args&&... args) {
    clear_line();
    log_->info(f, std::forward<Args>(args)...);
  }
  template <class... Args>
  void warn(fmt::format_string<Args...> f, Args&&... args) {
    clear_line();
    log_->warn(f, std::forward<Args>(args)...);
  }
  /// The step line "step S/T DETAILS": logged as is; on a terminal it replaces the previous one in
  /// place behind a progress bar (train.log gets the line without the bar).
  void progress(int64_t step, int64_t total, const std::string& details);
  /// Every step, on a terminal only: the bar and "step S/T" move on, with the last line's details.
  void tick(int64_t step, int64_t total);
  /// "[#####-----]  50% " for step/total (width 20 characters between the brackets).
  static std::string bar(int64_t step, int64_t total);
  /// An `error: ...` line on stderr (always, whatever the rank) and in train.log.
  void error(const std::string& message);
  /// Ends the progress line on a terminal (before the run's last messages).
  void end_progress();

  /// Opens metrics.jsonl for appending (writer only); UserError when it cannot.
  void open_metrics(const std::filesystem::path& file);
  /// training.report_to: [tensorboard]: every metrics record also goes to a new TensorBoard event
  /// file in `dir` (writer only), each number as the scalar "<split>/<key>" at the record's step.
  void open_events(const std::filesystem::path& dir);
  void metrics(const nlohmann::json& record);

  bool writer() const { return writer_; }

 private:
  void clear_line();
  std::shared_ptr<spdlog::logger> log_;
  std::ofstream metrics_;
  std::unique_ptr<EventFileWriter> events_;
  bool writer_ = true;
  bool tty_ = false;
  bool on_line_ = false;  // a progress line is showing
  std::string details_;   // of the last step line
};

}  // namespace unif::framework
