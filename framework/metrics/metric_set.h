// MetricSet (metric name -> value, the shape written to metrics.jsonl and printed by `unif eval`)
// and the "main" metric of each task, the one that picks the best checkpoint (SPEC §4).
// Pure C++: no Torch. Every metric here is higher-is-better except "mse", "loss" and "perplexity".
#pragma once
#include <map>
#include <string>
#include <vector>

#include "framework/common/task.h"

namespace unif::framework {

/// Metric name -> value. Always finite (no NaN), so `nlohmann::json j = metrics;` is valid JSON.
using MetricSet = std::map<std::string, double>;

/// Which family of metrics a task reports.
enum class MetricKind { classification, multilabel, regression, token, span, masked_lm, embedding, replaced_token };

/// The key of the metric that chooses `best/` (higher is better):
/// classification "accuracy", multilabel "micro_f1", regression "pearson", token "f1", span "f1",
/// masked_lm "perplexity" (lower is better), embedding "spearman_cosine" (similarity-scored dev pairs),
/// replaced_token "loss" (lower is better: MLM + rtd_weight · RTD).
std::string main_metric(MetricKind kind);

/// The dev metrics of a kind, as evaluation reports them ("loss" included; masked_lm: loss and
/// perplexity): what training.best_metric and training.early_stopping.metric may name.
std::vector<std::string> metric_names(MetricKind kind);

/// Whether smaller values of metric `name` are better: "loss", "perplexity", "mse" and names
/// ending in "_loss".
bool lower_is_better(const std::string& name);

/// The metric family `task` reports (the per-task metric choice; main_metric(metric_kind(task)) is
/// its main metric).
MetricKind metric_kind(Task task);

/// Maps the config's `task` (SPEC §3: classification | multilabel | regression |
/// token_classification | span_extraction | masked_lm | embedding | replaced_token_detection) to its MetricKind.
/// UserError for any other name.
MetricKind metric_kind_for_task(const std::string& task);

}  // namespace unif::framework
