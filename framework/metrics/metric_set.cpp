// main_metric / metric_kind_for_task: the per-task "main" metric table.
#include "framework/metrics/metric_set.h"

#include "framework/common/error.h"

namespace unif::framework {

std::string main_metric(MetricKind kind) {
  switch (kind) {
    case MetricKind::classification: return "accuracy";
    case MetricKind::multilabel: return "micro_f1";
    case MetricKind::regression: return "pearson";
    case MetricKind::token: return "f1";
    case MetricKind::span: return "f1";
    case MetricKind::masked_lm: return "perplexity";
  }
  return "f1";  // unreachable: every enumerator is handled above
}

bool lower_is_better(const std::string& name) {
  const std::string suffix = "_loss";
  return name == "loss" || name == "perplexity" || name == "mse" ||
         (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
}

MetricKind metric_kind_for_task(const std::string& task) {
  if (task == "classification") return MetricKind::classification;
  if (task == "multilabel") return MetricKind::multilabel;
  if (task == "regression") return MetricKind::regression;
  if (task == "token_classification") return MetricKind::token;
  if (task == "span_extraction") return MetricKind::span;
  if (task == "masked_lm") return MetricKind::masked_lm;
  throw UserError("metrics: unknown task '" + task +
                  "' (expected classification, multilabel, regression, token_classification or "
                  "span_extraction or masked_lm)");
}

}  // namespace unif::framework
