// `unif predict` on a masked_lm model directory (SPEC §7): reads {"text": "... [MASK] ..."} lines
// (the model's text field; JSONL or .tsv) and answers {"masks": [{"tokens": [...5], "scores":
// [...5]}, ...], "input": {...}} per line, one entry per [MASK] in order, highest probability
// first (HF's fill-mask). A blank line gets {"error": "blank line"}, a text without [MASK]
// {"error": "no [MASK] in the text"}, a [MASK] past max_seq_length or outputs that are not finite
// an error object naming that; a line without the text as a string is a bad line. Input, output,
// streaming and workers are the other tasks' (cmd_predict.cpp).
#pragma once
#include <cstdint>

#include "apps/unif/predict_io.h"
#include "framework/train/model_dir.h"

namespace unif::framework {
class WorkerPool;
}

namespace unif::app {

PredictAnswerer fill_mask_answerer(const framework::LoadedModel& model, const std::string& input_name, int64_t batch_size,
                                   framework::WorkerPool& workers);

}  // namespace unif::app
