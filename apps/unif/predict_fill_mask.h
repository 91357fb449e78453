// `unif predict` on a masked_lm model directory (SPEC §7): reads {"text": "... [MASK] ..."} lines
// (the model's text field; `-` = stdin) and writes {"masks": [{"tokens": [...5], "scores": [...5]},
// ...], "input": {...}} per line (`-` or none = stdout), one entry per [MASK] in order, highest
// probability first (HF's fill-mask). A blank line gets {"error": "blank line"}, a text without
// [MASK] {"error": "no [MASK] in the text"}; a line that is not a JSON object with the text field
// is a UserError naming the file and line.
#pragma once
#include <cstdint>
#include <string>

#include "framework/train/model_dir.h"

namespace unif::app {

int predict_fill_mask(const framework::LoadedModel& model, const std::string& input, const std::string& output,
                      int64_t batch_size);

}  // namespace unif::app
