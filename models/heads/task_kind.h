// TaskKind: which head sits on BERT. Mirrors the config's `task` (SPEC §3) and HF's architectures
// (+ problem_type) in config.json.
#pragma once
#include <string>

namespace unif::models {

enum class TaskKind { Classification, Multilabel, Regression, TokenClassification, SpanExtraction, MaskedLm };

/// The SPEC §3 `task` name: classification | multilabel | regression | token_classification | span_extraction | masked_lm.
std::string task_name(TaskKind kind);

}  // namespace unif::models
