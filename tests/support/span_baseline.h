// Test helper: the "first sentence of the context" baseline of span extraction on a JSONL file of
// {question, context, answers}, scored by a span metric (cmrc_metrics or squad_metrics).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "framework/config/run_config.h"
#include "framework/data/records.h"
#include "framework/data/span_decoding.h"
#include "framework/metrics/span.h"

namespace unif::test {

template <typename Metric>
framework::MetricSet first_sentence_baseline(const std::filesystem::path& file, Metric metric) {
  using namespace unif::framework;
  DataConfig d;
  d.text_fields = {"question", "context"};
  d.label_field = "answers";
  auto examples = make_examples(Task::SpanExtraction, d, {}, file, read_records(file), true);
  std::vector<std::string> predictions;
  std::vector<std::vector<std::string>> golds;
  for (const auto& ex : examples) {
    predictions.push_back(first_sentence(ex.texts[1]));
    golds.emplace_back();
    for (const auto& a : ex.answers) golds.back().push_back(a.text);
  }
  return metric(predictions, golds);
}

}  // namespace unif::test
