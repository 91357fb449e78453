// EarlyStopping: see early_stopping.h.
#include "framework/train/early_stopping.h"

#include <cmath>
#include <sstream>

#include "framework/common/error.h"

namespace unif::framework {

namespace {
std::string num(double v) {
  std::ostringstream o;
  o.precision(4);
  o << v;
  return o.str();
}
}  // namespace

std::string best_metric_name(const RunConfig& cfg) {
  if (!cfg.training.best_metric.empty()) return cfg.training.best_metric;
  // An embedding run evaluated on a retrieval set only: its main metric (sentence-transformers').
  if (cfg.data.dev.empty() && cfg.data.retrieval.given()) return "ndcg@10";
  return main_metric(metric_kind(cfg.task));
}

bool improves(const std::string& name, double v, double best) {
  return std::isnan(best) || (lower_is_better(name) ? v < best : v > best);
}

EarlyStopping::EarlyStopping(EarlyStoppingConfig config, std::string main_metric, Task task)
    : config_(std::move(config)),
      metric_(config_.metric.empty() ? std::move(main_metric) : config_.metric),
      task_(task) {}

void EarlyStopping::resume(const EarlyStoppingState& saved) {
  state_ = saved;
  state_.stopped = enabled() && state_.wait >= config_.patience;
}

std::optional<std::string> EarlyStopping::update(const MetricSet& metrics, int64_t step, bool last) {
  if (!enabled()) return std::nullopt;
  const auto found = metrics.find(metric_);
  if (found == metrics.end()) {
    std::string have;
    for (const auto& [k, v] : metrics) have += (have.empty() ? "" : ", ") + k;
    throw UserError("training.early_stopping.metric: '" + metric_ + "' is not a dev metric of task " +
                    to_string(task_) + " (expected one of " + have + ")");
  }
  const double v = found->second;
  const bool lower = lower_is_better(metric_);
  const bool significant = std::isnan(state_.best) || (lower ? state_.best - v : v - state_.best) > config_.min_delta;
  if (improves(metric_, v, state_.best)) state_.best = v;
  state_.wait = significant ? 0 : state_.wait + 1;
  if (state_.wait < config_.patience || last) return std::nullopt;  // at the last step the run ends anyway
  state_.stopped = true;
  return "early stopping: dev " + metric_ + " has not improved by more than " + num(config_.min_delta) + " for " +
         std::to_string(state_.wait) + " evaluation" + (state_.wait == 1 ? "" : "s") + " (best " + num(state_.best) +
         "); stopping at step " + std::to_string(step);
}

}  // namespace unif::framework
