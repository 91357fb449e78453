// main_metric / metric_kind: the per-task metric family and its "main" metric.
#include "framework/metrics/metric_set.h"

#include "framework/common/error.h"
#include "framework/metrics/retrieval.h"

namespace unif::framework {

std::string main_metric(MetricKind kind) {
  switch (kind) {
    case MetricKind::classification: return "accuracy";
    case MetricKind::multilabel: return "micro_f1";
    case MetricKind::regression: return "pearson";
    case MetricKind::token: return "f1";
    case MetricKind::span: return "f1";
    case MetricKind::masked_lm: return "perplexity";
    case MetricKind::embedding: return "spearman_cosine";
    case MetricKind::replaced_token: return "loss";
  }
  return "f1";  // unreachable: every enumerator is handled above
}

std::vector<std::string> metric_names(MetricKind kind) {
  switch (kind) {
    case MetricKind::classification: return {"accuracy", "f1", "loss"};
    case MetricKind::multilabel: return {"micro_f1", "macro_f1", "subset_accuracy", "loss"};
    case MetricKind::regression: return {"pearson", "spearman", "mse", "loss"};
    case MetricKind::token: return {"precision", "recall", "f1", "loss"};
    case MetricKind::span:  // the SQuAD 2.0 names with unanswerable questions
      return {"exact_match", "f1",       "loss",       "HasAns_exact", "HasAns_f1",
              "NoAns_exact", "NoAns_f1", "best_exact", "best_f1"};
    case MetricKind::masked_lm: return {"loss", "perplexity"};
    case MetricKind::replaced_token:  // the generator's MLM and the discriminator's detection
      return {"loss", "mlm_loss", "mlm_accuracy", "rtd_loss", "rtd_accuracy", "rtd_replaced_share"};
    case MetricKind::embedding: {  // scored dev pairs; a retrieval dev set (data.retrieval)
      auto names = similarity_metric_names();
      for (auto& n : retrieval_metric_names()) names.push_back(std::move(n));
      names.emplace_back("loss");
      return names;
    }
  }
  return {};  // unreachable: every enumerator is handled above
}

bool lower_is_better(const std::string& name) {
  const std::string suffix = "_loss";
  return name == "loss" || name == "perplexity" || name == "mse" ||
         (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
}

MetricKind metric_kind(Task task) {
  // One entry per row of framework/common/task.h, in Task order.
  static constexpr MetricKind kinds[] = {MetricKind::classification, MetricKind::multilabel,    MetricKind::regression,
                                         MetricKind::token,          MetricKind::span,          MetricKind::masked_lm,
                                         MetricKind::embedding,      MetricKind::replaced_token};
  static_assert(sizeof(kinds) / sizeof(kinds[0]) == kTaskSpecs.size(), "one metric family per task");
  return kinds[static_cast<size_t>(task)];
}

MetricKind metric_kind_for_task(const std::string& task) {
  if (const auto t = find_task(task)) return metric_kind(*t);
  throw UserError("metrics: unknown task '" + task +
                  "' (expected classification, multilabel, regression, token_classification or "
                  "span_extraction, masked_lm, embedding or replaced_token_detection)");
}

}  // namespace unif::framework
