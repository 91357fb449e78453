// `unif predict` for masked_lm: see predict_fill_mask.h.
#include "apps/unif/predict_fill_mask.h"

#include "framework/common/error.h"
#include "framework/train/fill_mask.h"

namespace unif::app {

using nlohmann::json;

PredictAnswerer fill_mask_answerer(const framework::LoadedModel& lm, const std::string& input_name, int64_t batch_size,
                                   framework::WorkerPool& workers) {
  const std::string field = lm.meta.text_fields.empty() ? "text" : lm.meta.text_fields.front();
  return [&lm, &workers, field, input_name, batch_size](std::vector<PredictLine>& lines, bool keep_going) {
    std::vector<json> answers(lines.size());
    std::vector<std::string> texts;
    std::vector<size_t> slot;
    for (size_t i = 0; i < lines.size(); ++i) {
      auto& l = lines[i];
      if (!l.error.empty()) {
        if (!keep_going) break;
        continue;
      }
      if (l.record.fields.is_null()) {
        answers[i] = {{"error", "blank line"}};
        continue;
      }
      const auto& f = l.record.fields;
      if (!f.contains(field) || !f.at(field).is_string()) {
        l.error = input_name + ":" + std::to_string(l.record.line) + ": expected a JSON object with a string field '" +
                  field + "'";
        if (!keep_going) break;
        continue;
      }
      texts.push_back(f.at(field).get<std::string>());
      slot.push_back(i);
    }
    const auto fills = framework::fill_mask(*lm.model, *lm.tokenizer, texts, lm.meta.max_seq_length, batch_size, 5, &workers);
    for (size_t k = 0; k < fills.size(); ++k) {
      json& r = answers[slot[k]];
      if (!fills[k].error.empty()) {
        r = {{"error", fills[k].error}};
      } else if (fills[k].masks.empty()) {
        r = {{"error", "no [MASK] in the text"}};
      } else {
        json masks = json::array();
        for (const auto& m : fills[k].masks) masks.push_back({{"tokens", m.tokens}, {"scores", m.scores}});
        r = {{"masks", masks}};
      }
      r["input"] = lines[slot[k]].record.fields;
    }
    return answers;
  };
}

}  // namespace unif::app
