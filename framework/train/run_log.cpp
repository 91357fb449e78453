// RunLog: see run_log.h.
#include "framework/train/run_log.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <vector>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "framework/common/error.h"

namespace unif::framework {

namespace fs = std::filesystem;

std::string fmt_num(double v, int precision) {
  std::ostringstream o;
  o << std::setprecision(precision) << v;
  return o.str();
}

std::string fmt_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  auto t = static_cast<int64_t>(s + 0.5);
  std::ostringstream o;
  if (t >= 3600) o << t / 3600 << "h";
  if (t >= 60) o << std::setw(t >= 3600 ? 2 : 1) << std::setfill('0') << (t / 60) % 60 << "m";
  o << std::setw(t >= 60 ? 2 : 1) << std::setfill('0') << t % 60 << "s";
  return o.str();
}

RunLog::RunLog(const fs::path& dir, bool writer, int rank) : writer_(writer) {
  // Console + train.log; only one logger of this name per process.
  spdlog::drop("unif");
  std::vector<spdlog::sink_ptr> sinks{std::make_shared<spdlog::sinks::stderr_sink_mt>()};
  if (writer_) sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>((dir / "train.log").string()));
  log_ = std::make_shared<spdlog::logger>("unif", sinks.begin(), sinks.end());
  log_->set_pattern(writer_ ? "[%Y-%m-%d %H:%M:%S] %v" : "[%Y-%m-%d %H:%M:%S] [rank " + std::to_string(rank) + "] %v");
  if (!writer_) log_->set_level(spdlog::level::warn);
  log_->flush_on(spdlog::level::info);
  tty_ = writer_ && ::isatty(2) != 0;
}

void RunLog::clear_line() {
  if (!on_line_) return;
  std::fputs("\r\033[K", stderr);
  on_line_ = false;
}

std::string RunLog::bar(int64_t step, int64_t total) {
  constexpr int kWidth = 20;
  const double fraction =
      total > 0 ? std::clamp(static_cast<double>(step) / static_cast<double>(total), 0.0, 1.0) : 0.0;
  const auto filled = static_cast<int>(fraction * kWidth);
  char pct[8];
  std::snprintf(pct, sizeof pct, "%3d%% ", static_cast<int>(fraction * 100.0));
  return "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kWidth - filled), '-') +
         "] " + pct;
}

void RunLog::progress(int64_t step, int64_t total, const std::string& details) {
  const std::string line = "step " + std::to_string(step) + "/" + std::to_string(total) + " " + details;
  details_ = details;
  if (!tty_) {
    log_->info("{}", line);
    return;
  }
  std::fprintf(stderr, "\r\033[K%s%s", bar(step, total).c_str(), line.c_str());
  std::fflush(stderr);
  on_line_ = true;
  log_->sinks()[1]->log(spdlog::details::log_msg("unif", spdlog::level::info, line));
}

void RunLog::tick(int64_t step, int64_t total) {
  if (!tty_) return;
  std::fprintf(stderr, "\r\033[K%sstep %lld/%lld%s%s", bar(step, total).c_str(), static_cast<long long>(step),
               static_cast<long long>(total), details_.empty() ? "" : " ", details_.c_str());
  std::fflush(stderr);
  on_line_ = true;
}

void RunLog::error(const std::string& message) {
  end_progress();
  std::fprintf(stderr, "error: %s\n", message.c_str());
  if (writer_) log_->sinks()[1]->log(spdlog::details::log_msg("unif", spdlog::level::err, "error: " + message));
}

void RunLog::end_progress() {
  if (!on_line_) return;
  std::fputs("\n", stderr);
  on_line_ = false;
}

void RunLog::open_metrics(const fs::path& file) {
  if (!writer_) return;
  metrics_.open(file, std::ios::app);
  if (!metrics_) throw UserError("output_dir: cannot write " + file.string());
}

void RunLog::open_events(const fs::path& dir) {
  if (!writer_) return;
  events_ = std::make_unique<EventFileWriter>(dir);
}

void RunLog::metrics(const nlohmann::json& record) {
  if (!writer_) return;
  metrics_ << record.dump() << "\n";
  metrics_.flush();
  if (!events_ || !record.contains("split") || !record.contains("step")) return;
  const std::string split = record.at("split").get<std::string>();
  const auto step = record.at("step").get<int64_t>();
  for (const auto& [key, value] : record.items())
    if (value.is_number() && key != "step") events_->scalar(split + "/" + key, value.get<double>(), step);
  events_->flush();
}

}  // namespace unif::framework
