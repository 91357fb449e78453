// unif's public C++ API in one include: `#include <unif/unif.h>` with unif::framework linked
// (find_package(unif); see docs/cpp-api.md). What is reachable from here is what `cmake --install`
// installs; every other header of the source tree is internal and may change without notice.
#pragma once

// Errors every entry point throws (unif::framework::Error and its kinds).
#include "framework/common/error.h"
#include "framework/common/runtime.h"

// The run configuration: YAML -> typed RunConfig, validated.
#include "framework/config/run_config.h"

// Text: vocabularies and the tokenizer.
#include "framework/text/bert_tokenizer.h"
#include "framework/text/vocab.h"

// Data: records from JSONL / TSV / CSV / CoNLL files and the encoded datasets.
#include "framework/data/dataset.h"
#include "framework/data/records.h"

// Checkpoints: HF directories in and out, safetensors, state dicts.
#include "framework/checkpoint/pretrained.h"
#include "framework/checkpoint/safetensors.h"
#include "framework/checkpoint/state_dict.h"

// Metrics.
#include "framework/metrics/metrics.h"

// Models: the TaskModel interface a custom model implements, its batch and output, BERT's heads.
#include "models/heads/encoder_task_model.h"
#include "models/io.h"
#include "models/task_model.h"

// Training: the parts a run is built from, and the Trainer.
#include "framework/train/build.h"
#include "framework/train/trainer.h"

// Inference: a model directory loaded once, predictions on batches of records (unif::Predictor),
// and the records of concurrent callers batched through it (unif::Batcher).
#include "framework/inference/batcher.h"
#include "framework/inference/predictor.h"
