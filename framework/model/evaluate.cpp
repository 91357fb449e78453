// evaluate, loss_normalizer, word_predictions: see evaluate.h.
#include "framework/model/evaluate.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/common/runtime.h"
#include "framework/data/batching.h"
#include "framework/metrics/classification.h"
#include "framework/metrics/metric_set.h"
#include "framework/metrics/multilabel.h"
#include "framework/metrics/regression.h"
#include "framework/metrics/retrieval.h"
#include "framework/metrics/report.h"
#include "framework/metrics/sequence_labeling.h"
#include "framework/metrics/span.h"
#include "framework/metrics/squad_v2.h"
#include "framework/parallel/device_transfer.h"
#include "framework/text/unicode.h"
#include "models/electra/pretraining.h"
#include "models/heads/loss.h"

namespace unif::framework {

namespace {

// Gold and predicted labels of the first `n` examples, from their logits: one class (argmax), a
// label set (logit > 0) or word tags (argmax at each word's first piece), as the metrics read them.
struct SingleLabels {
  std::vector<int64_t> gold, predicted;
};
SingleLabels single_labels(const TaskData& data, const Evaluation& ev, int64_t n) {
  SingleLabels out;
  for (int64_t i = 0; i < n; ++i) {
    out.gold.push_back(data.examples[static_cast<size_t>(i)].labels.at(0));
    out.predicted.push_back(ev.logits[static_cast<size_t>(i)].argmax().item<int64_t>());
  }
  return out;
}

struct LabelSets {
  std::vector<std::vector<int64_t>> gold, predicted;
};
LabelSets label_sets(const TaskData& data, const Evaluation& ev, int64_t n) {
  LabelSets out;
  for (int64_t i = 0; i < n; ++i) {
    out.gold.push_back(data.examples[static_cast<size_t>(i)].labels);
    auto on = (ev.logits[static_cast<size_t>(i)] > 0).nonzero().flatten();
    out.predicted.emplace_back(on.data_ptr<int64_t>(), on.data_ptr<int64_t>() + on.numel());
  }
  return out;
}

struct TagLists {
  std::vector<std::vector<std::string>> gold, predicted;
};

// span.metric: cmrc, or auto with a context holding CJK ideographs.
bool uses_cmrc(SpanMetric metric, bool chinese) {
  return metric == SpanMetric::Cmrc || (metric == SpanMetric::Auto && chinese);
}

bool has_chinese(const std::string& text) {
  for (char32_t c : unicode::decode_utf8(text))
    if (c >= 0x4E00 && c <= 0x9FFF) return true;
  return false;
}

// Span extraction with unanswerable questions: the SQuAD 2.0 evaluation's numbers (as fractions;
// thresholds in logits), per question by span.metric's script (the main exact_match and f1) and by
// each script (squad_*, cmrc_*); best_* from the null odds when the model answers null.
MetricSet unanswerable_span_metrics(const TaskData& data, const Evaluation& ev) {
  SquadV2Input in;
  bool chinese = false;
  for (size_t x = 0; x < data.examples.size(); ++x) {
    in.predictions.push_back(ev.answers[x].no_answer ? std::string() : ev.answers[x].text);
    in.golds.emplace_back();
    for (const auto& a : data.examples[x].answers) in.golds.back().push_back(a.text);
    chinese = chinese || has_chinese(data.examples[x].texts.at(1));
  }
  if (!ev.null_odds.empty())
    for (double d : ev.null_odds) in.na_probs.push_back(std::isfinite(d) ? d : 1e30);
  const bool use_cmrc = uses_cmrc(data.span.metric, chinese);
  MetricSet out;
  const double inf = std::numeric_limits<double>::infinity();  // the predictions already hold the nulls
  for (const auto scorer : {SpanScorer::Squad, SpanScorer::Cmrc}) {
    in.scorer = scorer;
    const auto v2 = squad_v2_evaluation(in, inf);
    const std::string prefix = scorer == SpanScorer::Squad ? "squad_" : "cmrc_";
    out[prefix + "exact_match"] = v2.at("exact") / 100.0;
    out[prefix + "f1"] = v2.at("f1") / 100.0;
    if ((scorer == SpanScorer::Cmrc) != use_cmrc) continue;
    out["exact_match"] = v2.at("exact") / 100.0;
    out["f1"] = v2.at("f1") / 100.0;
    for (const auto& [key, value] : v2) {
      if (key == "exact" || key == "f1" || key == "total") continue;
      const bool fraction = key.find("_total") == std::string::npos && key.find("_thresh") == std::string::npos;
      out[key] = fraction ? value / 100.0 : value;
    }
  }
  return out;
}

int64_t outside_tag(const LabelSet& labels) { return labels.index.count("O") ? labels.index.at("O") : 0; }

TagLists tag_lists(const TaskData& data, const Evaluation& ev, const LabelSet& labels, int64_t n) {
  TagLists out;
  for (int64_t i = 0; i < n; ++i) {
    const auto& ex = data.examples[static_cast<size_t>(i)];
    std::vector<std::string> tt, pp;
    for (auto l : ex.labels) tt.push_back(labels.names[static_cast<size_t>(l)]);
    // The model's own decoding (argmax or a CRF's path), which evaluate() stored for labelled data.
    for (auto l : ev.word_tags.at(static_cast<size_t>(i))) pp.push_back(labels.names[static_cast<size_t>(l)]);
    out.gold.push_back(std::move(tt));
    out.predicted.push_back(std::move(pp));
  }
  return out;
}

}  // namespace

double loss_normalizer(Task task, const models::Batch& b, const torch::Tensor& class_weights) {
  const TaskSpec& spec = task_spec(task);
  const bool tokens = spec.normalizer == LossNormalizer::LabeledTokens;
  if (class_weights.defined() && (tokens || spec.loss_options)) return models::loss_normalizer(b.labels, class_weights);
  if (tokens) return static_cast<double>((b.labels != -100).sum().item<int64_t>());
  return static_cast<double>(b.size());
}

std::vector<int64_t> word_predictions(const EncodedExample& e, const Example& ex, const torch::Tensor& logits,
                                      int64_t fallback, const TagDecoder& decode) {
  std::vector<int64_t> out(ex.texts.size(), fallback);
  auto arg = decode_word_starts(logits, e.word_start, decode);
  auto a = arg.accessor<int64_t, 1>();
  for (size_t p = 0; p < e.word_start.size() && static_cast<int64_t>(p) < arg.size(0); ++p)
    if (e.word_start[p] >= 0) out[static_cast<size_t>(e.word_start[p])] = a[static_cast<int64_t>(p)];
  return out;
}

std::vector<int64_t> batch_bounds(const std::vector<EncodedExample>& encoded, const std::vector<int64_t>& order,
                                  int64_t batch_size, int64_t workers) {
  const auto n = static_cast<int64_t>(order.size());
  const int64_t batches = (n + batch_size - 1) / batch_size;
  std::vector<int64_t> bounds{0};
  if (workers <= 1 || batches <= 1 || batches > workers) {
    for (int64_t k = 1; k <= batches; ++k) bounds.push_back(std::min(n, k * batch_size));
    return bounds;
  }
  // As many batches as workers or fewer (a server's batch split over the CPU workers): cut the
  // length-sorted order where the tokens are shared equally, so that the workers finish together
  // (the 16 longest and the 16 shortest of 32 texts would leave one core idle half the time).
  auto tokens = [&](int64_t i) {
    return static_cast<double>(encoded[static_cast<size_t>(order[static_cast<size_t>(i)])].input_ids.size());
  };
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total += tokens(i);
  double sum = 0;
  for (int64_t i = 0, k = 1; i < n && k < batches; ++i) {
    const double before = sum;
    sum += tokens(i);
    const double target = total * static_cast<double>(k) / static_cast<double>(batches);
    if (sum < target) continue;
    // Cut after i, or before it when that is nearer the share (never an empty batch).
    const int64_t cut = (target - before < sum - target && i > bounds.back()) ? i : i + 1;
    if (cut >= n) break;
    bounds.push_back(cut);
    ++k;
  }
  bounds.push_back(n);
  return bounds;
}

Evaluation evaluate(models::TaskModel& model, Task task, const TaskData& data, const LabelSet& labels,
                    int64_t batch_size, const torch::Tensor& class_weights, bool sort_by_length, WorkerPool* workers) {
  torch::NoGradGuard no_grad;
  torch::Device device = torch::kCPU;  // evaluation runs on the model's device
  for (const auto& p : model.parameters()) {
    device = p.device();
    break;
  }
  const bool was_training = model.is_training();
  model.eval();
  Evaluation ev;
  auto n = static_cast<int64_t>(data.encoded.size());  // entries; with long_text windows, then examples
  if (task_spec(task).input == TaskInput::MlmText) {
    // The fixed evaluation masks; no logits kept (masked_lm: M x V each batch). Replaced-token
    // detection sums its per-example statistics, its discriminator term scaled by the dev set's M / T.
    const bool pretraining = metric_kind(task) == MetricKind::replaced_token;
    double tokens = 0;
    for (const auto& e : data.encoded) tokens += static_cast<double>(e.input_ids.size());
    const double ratio = tokens > 0 ? static_cast<double>(masked_tokens(data.encoded, data.mlm)) / tokens : 0.0;
    double loss_sum = 0.0, z = 0.0;
    torch::Tensor stats;
    for (int64_t start = 0; start < n; start += batch_size) {
      std::vector<int64_t> idx;
      for (int64_t i = start; i < std::min(n, start + batch_size); ++i) idx.push_back(i);
      auto batch = to_device(collate_mlm(data.encoded, idx, data.mlm, kEvalEpoch), device);  // the model's device
      batch.token_ratio = ratio;
      const auto out = model.forward(batch);
      loss_sum += out.example_losses.sum().item<double>();
      z += loss_normalizer(task, batch);
      if (pretraining) {
        const auto sums = out.logits.to(torch::kCPU, torch::kFloat64).sum(0);
        stats = stats.defined() ? stats + sums : sums;
      }
    }
    if (was_training) model.train();
    if (z > 0) {
      ev.metrics["loss"] = loss_sum / z;
      if (!pretraining) ev.metrics["perplexity"] = std::exp(loss_sum / z);
    }
    if (pretraining && stats.defined()) {
      using P = models::ElectraPretrainingModel;
      const auto at = [&](int64_t k) { return stats[k].item<double>(); };
      const double masked = at(P::kStatMasked), real = at(P::kStatTokens);
      if (masked > 0) {
        ev.metrics["mlm_loss"] = at(P::kStatMlmLoss) / masked;
        ev.metrics["mlm_accuracy"] = at(P::kStatMlmCorrect) / masked;
      }
      if (real > 0) {
        ev.metrics["rtd_loss"] = at(P::kStatRtdLoss) / real;
        ev.metrics["rtd_accuracy"] = at(P::kStatRtdCorrect) / real;
        ev.metrics["rtd_replaced_share"] = at(P::kStatReplaced) / real;
      }
    }
    return ev;
  }
  ev.logits.resize(static_cast<size_t>(n));
  double loss_sum = 0.0;
  double z = 0;
  bool labeled = true;
  // Batches of similar lengths pad less; each output goes back to its entry's index.
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  if (sort_by_length)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return data.encoded[static_cast<size_t>(a)].input_ids.size() >
             data.encoded[static_cast<size_t>(b)].input_ids.size();
    });
  const auto bounds = batch_bounds(data.encoded, order, batch_size,
                                   sort_by_length && workers != nullptr && device.is_cpu() ? workers->size() : 1);
  const auto batches = static_cast<int64_t>(bounds.size()) - 1;
  // Per batch: its loss sum and normaliser (summed in batch order below, whichever worker ran it).
  std::vector<double> batch_loss(static_cast<size_t>(batches), 0.0), batch_z(static_cast<size_t>(batches), 0.0);
  std::vector<char> batch_labeled(static_cast<size_t>(batches), 1);
  std::vector<int64_t> exit_layers(static_cast<size_t>(n), 0);  // each entry's; 0: not reported
  auto run_batch = [&](int64_t k) {
    std::vector<int64_t> idx(order.begin() + bounds[static_cast<size_t>(k)],
                             order.begin() + bounds[static_cast<size_t>(k) + 1]);
    auto batch = to_device(collate(task, data.encoded, data.examples, idx, labels.size()), device);
    auto out = model.forward(batch);
    if (model.couples_examples()) {
      // A loss over the whole batch (embedding): on this evaluation batch, where it can be computed
      // (two texts or more per example; the pair scores when the loss needs them).
      bool computed = false;
      if (out.logits.dim() == 3 && out.logits.size(1) >= 2) try {
          batch_loss[static_cast<size_t>(k)] = model.batch_loss(out, batch).item<double>();
          batch_z[static_cast<size_t>(k)] = static_cast<double>(batch.size());
          computed = true;
        } catch (const std::invalid_argument&) {
        } catch (const UserError&) {}
      batch_labeled[static_cast<size_t>(k)] = computed ? 1 : 0;
    } else if (batch.labels.defined()) {
      batch_loss[static_cast<size_t>(k)] = out.example_losses.sum().item<double>();
      batch_z[static_cast<size_t>(k)] = loss_normalizer(task, batch, class_weights);
    } else {
      batch_labeled[static_cast<size_t>(k)] = 0;
    }
    out.logits = out.logits.to(torch::kCPU);  // metrics read them on the CPU
    for (size_t b = 0; b < idx.size(); ++b) {
      auto row = out.logits[static_cast<int64_t>(b)];
      if (task_spec(task).logits_per_token)
        row = row.narrow(0, 0, static_cast<int64_t>(data.encoded[static_cast<size_t>(idx[b])].input_ids.size()));
      ev.logits[static_cast<size_t>(idx[b])] = row.contiguous();  // distinct entries per batch
    }
    if (out.exit_layers.defined()) {
      const torch::Tensor layers = out.exit_layers.to(torch::kCPU);
      for (size_t b = 0; b < idx.size(); ++b)
        exit_layers[static_cast<size_t>(idx[b])] = layers[static_cast<int64_t>(b)].item<int64_t>();
    }
  };
  if (workers == nullptr || workers->size() <= 1 || !device.is_cpu() || batches <= 1) {
    for (int64_t k = 0; k < batches; ++k) run_batch(k);
  } else {
    ScopedBlasThreads blas(1);  // each worker's products on its own thread, all at once
    workers->run(batches, run_batch);
  }
  for (int64_t k = 0; k < batches; ++k) {
    loss_sum += batch_loss[static_cast<size_t>(k)];
    z += batch_z[static_cast<size_t>(k)];
    if (!batch_labeled[static_cast<size_t>(k)]) labeled = false;
  }
  if (was_training) model.train();
  if (n > 0 && exit_layers.front() > 0) ev.exit_layers = std::move(exit_layers);
  if (data.windows.on && task_spec(task).input == TaskInput::Text) {
    // data.long_text windows: each text's logits pooled from its windows (for the metrics and
    // predictions; the loss above is the windows'); an exit layer per text, its deepest window's.
    ev.logits = pool_windows(data.encoded, ev.logits, data.examples.size(), data.windows.max_pooling);
    if (!ev.exit_layers.empty()) {
      std::vector<int64_t> deepest(data.examples.size(), 0);
      for (int64_t i = 0; i < n; ++i) {
        auto& d = deepest[static_cast<size_t>(data.encoded[static_cast<size_t>(i)].example)];
        d = std::max(d, ev.exit_layers[static_cast<size_t>(i)]);
      }
      ev.exit_layers = std::move(deepest);
    }
    n = static_cast<int64_t>(data.examples.size());
  }
  if (task == Task::SpanExtraction) {
    std::vector<std::vector<const EncodedExample*>> windows(data.examples.size());
    std::vector<std::vector<torch::Tensor>> logits(data.examples.size());
    for (int64_t i = 0; i < n; ++i) {
      const auto& e = data.encoded[static_cast<size_t>(i)];
      windows[static_cast<size_t>(e.example)].push_back(&e);
      logits[static_cast<size_t>(e.example)].push_back(ev.logits[static_cast<size_t>(i)]);
    }
    ev.answers.resize(data.examples.size());
    if (data.span.unanswerable) ev.null_odds.resize(data.examples.size());
    for (size_t x = 0; x < data.examples.size(); ++x) {
      auto best =
          decode_spans(data.examples[x], windows[x], logits[x], data.span.max_answer_length, data.span.n_best_size);
      if (data.span.unanswerable) {
        ev.null_odds[x] = null_odds(best, logits[x], data.span.verifier_weight);
        ev.answers[x] = decide_null(best, logits[x], ev.null_odds[x], data.span.null_score_diff_threshold);
      } else if (!best.empty())
        ev.answers[x] = std::move(best.front());
    }
  }
  if (!labeled || n == 0) return ev;
  if (metric_kind(task) == MetricKind::token) {  // one entry per example: each has labels
    const TagDecoder decode = [&model](const torch::Tensor& e, torch::Tensor* p) { return model.decode_tags(e, p); };
    for (int64_t i = 0; i < n; ++i)
      ev.word_tags.push_back(word_predictions(data.encoded[static_cast<size_t>(i)],
                                              data.examples[static_cast<size_t>(i)], ev.logits[static_cast<size_t>(i)],
                                              outside_tag(labels), decode));
  }
  switch (metric_kind(task)) {
    case MetricKind::classification: {
      const auto l = single_labels(data, ev, n);
      ev.metrics = classification_metrics(l.gold, l.predicted, labels.size());
      break;
    }
    case MetricKind::multilabel: {
      const auto l = label_sets(data, ev, n);
      ev.metrics = multilabel_metrics_from_sets(l.gold, l.predicted, labels.size());
      break;
    }
    case MetricKind::regression: {
      std::vector<double> t, p;
      for (int64_t i = 0; i < n; ++i) {
        t.push_back(data.examples[static_cast<size_t>(i)].value);
        p.push_back(ev.logits[static_cast<size_t>(i)].flatten()[0].item<double>());
      }
      ev.metrics = regression_metrics(t, p);
      break;
    }
    case MetricKind::token: {
      const auto l = tag_lists(data, ev, labels, n);
      ev.metrics = token_metrics(l.gold, l.predicted);
      break;
    }
    case MetricKind::span: {
      if (data.span.unanswerable || std::any_of(data.examples.begin(), data.examples.end(),
                                                [](const Example& e) { return e.has_label && e.answers.empty(); })) {
        ev.metrics = unanswerable_span_metrics(data, ev);
        break;
      }
      std::vector<std::string> predictions;
      std::vector<std::vector<std::string>> golds;
      bool chinese = false;
      for (size_t x = 0; x < data.examples.size(); ++x) {
        predictions.push_back(ev.answers[x].text);
        golds.emplace_back();
        for (const auto& a : data.examples[x].answers) golds.back().push_back(a.text);
        chinese = chinese || has_chinese(data.examples[x].texts.at(1));
      }
      const auto squad = squad_metrics(predictions, golds), cmrc = cmrc_metrics(predictions, golds);
      const bool use_cmrc = uses_cmrc(data.span.metric, chinese);
      const auto& main = use_cmrc ? cmrc : squad;
      ev.metrics["exact_match"] = main.at("exact_match");
      ev.metrics["f1"] = main.at("f1");
      ev.metrics["squad_exact_match"] = squad.at("exact_match");
      ev.metrics["squad_f1"] = squad.at("f1");
      ev.metrics["cmrc_exact_match"] = cmrc.at("exact_match");
      ev.metrics["cmrc_f1"] = cmrc.at("f1");
      break;
    }
    case MetricKind::masked_lm:
    case MetricKind::replaced_token: break;  // handled above
    case MetricKind::embedding: {
      // Similarity-scored pairs: the cosine of the two texts' embeddings against the score
      // (sentence-transformers' EmbeddingSimilarityEvaluator).
      bool scored = true;
      for (const auto& ex : data.examples) scored = scored && ex.has_label;
      if (!scored || ev.logits.front().dim() != 2 || ev.logits.front().size(0) != 2) break;
      std::vector<double> gold, cosine;
      for (int64_t i = 0; i < n; ++i) {
        const auto& e = ev.logits[static_cast<size_t>(i)];
        gold.push_back(data.examples[static_cast<size_t>(data.encoded[static_cast<size_t>(i)].example)].value);
        cosine.push_back(torch::cosine_similarity(e[0].unsqueeze(0), e[1].unsqueeze(0), 1, 1e-8).item<double>());
      }
      ev.metrics = similarity_metrics(gold, cosine);
      break;
    }
  }
  if (!ev.exit_layers.empty()) {
    double sum = 0;
    for (auto l : ev.exit_layers) sum += static_cast<double>(l);
    ev.metrics["exit_layer"] = sum / static_cast<double>(n);
  }
  ev.metrics["loss"] = z > 0 ? loss_sum / z : 0.0;
  return ev;
}

std::optional<Report> evaluation_report(Task task, const TaskData& data, const LabelSet& labels, const Evaluation& ev) {
  const auto n = static_cast<int64_t>(ev.logits.size());
  switch (metric_kind(task)) {
    case MetricKind::classification: {
      const auto l = single_labels(data, ev, n);
      return classification_report(l.gold, l.predicted, labels.names);
    }
    case MetricKind::multilabel: {
      const auto l = label_sets(data, ev, n);
      return multilabel_report(indicator_matrix(l.gold, labels.size()), indicator_matrix(l.predicted, labels.size()),
                               labels.names);
    }
    case MetricKind::token: {
      const auto l = tag_lists(data, ev, labels, n);
      return entity_report(l.gold, l.predicted);
    }
    case MetricKind::regression:
    case MetricKind::span:
    case MetricKind::embedding:
    case MetricKind::masked_lm:
    case MetricKind::replaced_token: break;
  }
  return std::nullopt;
}

}  // namespace unif::framework
