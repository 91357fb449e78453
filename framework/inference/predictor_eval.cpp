// Predictor::evaluate and its configuration: what `unif eval` runs (see predictor.h).
#include <cstdio>
#include <optional>
#include <stdexcept>

#include <c10/core/InferenceMode.h>

#include "framework/config/run_config.h"
#include "framework/engines/auto_devices.h"
#include "framework/engines/devices.h"
#include "framework/inference/predictor.h"
#include "framework/inference/predictor_state.h"
#include "framework/metrics/metric_set.h"
#include "framework/data/ranking.h"
#include "framework/data/retrieval.h"
#include "framework/metrics/retrieval.h"
#include "framework/model/evaluate.h"
#include "framework/model/retrieval_eval.h"
#include "framework/model/setup.h"
#include "models/quantize.h"

namespace unif {

nlohmann::json EvalResult::to_json() const {
  nlohmann::json j(metrics);
  j["examples"] = examples;
  if (!report.is_null()) j["report"] = report;
  return j;
}

PredictorOptions Predictor::options_for(const fw::RunConfig& config, const std::string& quantize) {
  PredictorOptions o;
  o.quantize = quantize;
  o.unpadded = config.model.unpadded;
  o.batch_size = config.training.evaluation_batch_size();
  const auto devices = fw::parse_devices(config.parallel.devices);
  if (devices.automatic) {
    o.device = "auto";
    o.threads = 0;
  } else {
    fw::check_present(devices);
    o.device = devices.devices.front().str();
    o.threads = fw::cpu_eval_workers(devices, 0);  // its CPU entries, one worker each
  }
  return o;
}

fw::RunConfig Predictor::eval_config(const std::string& data, const std::vector<std::string>& sets) const {
  const auto& meta = state_->lm.meta;
  fw::RunConfig base;
  base.task = meta.task;
  base.data.dev = data;
  base.data.text_fields = meta.text_fields;
  base.data.label_field = meta.label_field;
  base.span = meta.span;
  return fw::parse_config(fw::to_yaml(base), state_->dir.string() + " (unif eval without a config)", sets,
                          fw::Purpose::Eval);
}

EvalResult Predictor::evaluate(const fw::RunConfig& cfg, bool report) const {
  const auto& s = *state_;
  const auto& lm = s.lm;
  const std::string source = cfg.source.string();
  const std::string model = s.dir.string();
  if (cfg.data.dev.empty() && !cfg.data.retrieval.given())
    throw UserError(source +
                    ": data.dev: required by `unif eval` (or give --data; or data.retrieval for task embedding)");
  if (lm.meta.task != cfg.task)
    throw UserError(model + ": the model was trained for task " + to_string(lm.meta.task) + " but the config says " +
                    to_string(cfg.task));
  fw::check_segments(cfg.task, cfg.data.text_fields, source + ": data.text_fields",
                     models::usable_token_types(lm.hf.bert), "the model (" + model + ")");
  const auto kind = fw::metric_kind(cfg.task);
  if (report && kind != fw::MetricKind::classification && kind != fw::MetricKind::multilabel &&
      kind != fw::MetricKind::token)
    throw UserError("unif eval --report: task " + to_string(cfg.task) +
                    " has no classes to report on (classification, multilabel and token_classification do)");
  fw::TaskData dev;
  fw::SpanConfig span = cfg.span;
  span.unanswerable = lm.meta.span.unanswerable;  // the model's, not a key
  if (!cfg.data.dev.empty())
    dev = fw::load_task_data(cfg.task, cfg.data, s.labels, cfg.data.dev, *lm.tokenizer, lm.meta.max_seq_length,
                             lm.meta.truncate_method, true, span,
                             cfg.task == Task::MaskedLm ? fw::mlm_masking(cfg, *lm.tokenizer) : fw::MlmMasking{});
  std::optional<fw::RetrievalData> retrieval;
  if (cfg.data.retrieval.given())
    retrieval = fw::read_retrieval_data(cfg.data.retrieval.queries, cfg.data.retrieval.corpus);
  // The run's loss (training.loss, distill): the same ℓ and Z as the dev evaluations of training.
  // Its model is the loaded one (already on the device, int8 where asked), plus a distillation
  // teacher when the config has one, which joins it there.
  const auto setup = fw::evaluation_setup(cfg, lm, s.labels);
  torch::Device device = torch::kCPU;
  for (const auto& p : lm.model->parameters()) {
    device = p.device();
    break;
  }
  if (device.is_cuda()) setup.model->to(device);
  if (s.options.quantize == "int8") {
    try {
      models::quantize_dynamic_int8(*setup.model);  // the teacher's layers too; the student's are packed again
    } catch (const std::runtime_error& e) { throw UserError(e.what()); }
  }
  fw::Evaluation ev;
  {
    std::lock_guard<std::mutex> lock(s.forward_mutex);
    c10::InferenceMode inference;
    if (!dev.encoded.empty())
      ev = fw::evaluate(*setup.model, cfg.task, dev, s.labels, cfg.training.evaluation_batch_size(),
                        setup.class_weights, true, s.workers.get());
    // data.retrieval (task embedding): the ranking metrics beside the pairs' (docs/spec.md §3).
    if (retrieval)
      for (const auto& [k, v] : fw::evaluate_retrieval(
               *setup.model, *retrieval, *lm.tokenizer, static_cast<int>(lm.meta.max_seq_length),
               fw::parse_truncate_method(lm.meta.truncate_method), cfg.training.evaluation_batch_size()))
        ev.metrics[k] = v;
  }
  EvalResult out;
  out.metrics = ev.metrics;
  out.examples =
      static_cast<int64_t>(dev.examples.size()) + (retrieval ? static_cast<int64_t>(retrieval->queries.size()) : 0);
  if (report) {
    const auto r = fw::evaluation_report(cfg.task, dev, s.labels, ev);
    if (!r) throw std::logic_error("unif eval --report: no report for task " + to_string(cfg.task));
    out.report_text = r->text();
    out.report = r->json();
  }
  return out;
}

double Predictor::ranking_score(const Prediction& p) const {
  if (!p.ok()) throw UserError(p.error);
  const Task t = task();
  const auto n = labels().size();
  if (t == Task::Regression) return p.value;
  if (t == Task::Classification && n == 2 && p.logits.size() == 2) return p.logits[1] - p.logits[0];
  if (t == Task::Multilabel && n == 1 && p.logits.size() == 1) return p.logits[0];
  throw UserError(
      "ranking needs a pair model that scores a pair: a regression model, a classifier with 2 labels or a "
      "multilabel model with 1; this one is a " +
      to_string(t) + " model with " + std::to_string(n) + " labels");
}

EvalResult Predictor::evaluate_ranking(const std::filesystem::path& file) const {
  const auto groups = fw::read_ranking_file(file);
  {  // the model kind first: a wrong model is one error, not one per record
    Prediction probe;
    probe.task = task();
    probe.value = 0;
    probe.logits.assign(task() == Task::Regression ? 0 : labels().size(), 0.0);
    (void)ranking_score(probe);
  }
  // Every (query, text) pair, in chunks: predict() sorts each chunk by length over the workers.
  std::vector<nlohmann::json> pairs;
  std::vector<std::pair<size_t, size_t>> slot;  // (group, text)
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t i = 0; i < groups[g].texts.size(); ++i) {
      pairs.push_back(nlohmann::json::array({groups[g].query, groups[g].texts[i]}));
      slot.emplace_back(g, i);
    }
  std::vector<std::vector<double>> scores(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) scores[g].resize(groups[g].texts.size());
  constexpr size_t kChunk = 4096;
  for (size_t at = 0; at < pairs.size(); at += kChunk) {
    const std::vector<nlohmann::json> chunk(
        pairs.begin() + static_cast<std::ptrdiff_t>(at),
        pairs.begin() + static_cast<std::ptrdiff_t>(std::min(pairs.size(), at + kChunk)));
    const auto answers = predict(chunk);
    for (size_t k = 0; k < answers.size(); ++k) {
      const auto [g, i] = slot[at + k];
      if (!answers[k].ok())
        throw UserError(file.string() + ":" + std::to_string(groups[g].line) + ": texts[" + std::to_string(i) +
                        "]: " + answers[k].error);
      scores[g][i] = ranking_score(answers[k]);
    }
  }
  std::vector<fw::RankingQuery> queries;
  int64_t without = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].relevant.empty()) {
      ++without;
      continue;
    }
    queries.push_back({scores[g], groups[g].relevant});
  }
  if (queries.empty())
    throw UserError(file.string() + ": no query has a relevant text (a label above 0): nothing to rank");
  EvalResult r;
  for (const auto& [name, value] : fw::retrieval_metrics(queries)) r.metrics[name] = value;
  r.metrics["queries_without_relevant"] = static_cast<double>(without);
  r.examples = static_cast<int64_t>(queries.size());
  return r;
}

}  // namespace unif
