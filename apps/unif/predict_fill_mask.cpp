// `unif predict` for masked_lm: see predict_fill_mask.h.
#include "apps/unif/predict_fill_mask.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "framework/common/error.h"
#include "framework/common/json_input.h"
#include "framework/train/fill_mask.h"

namespace unif::app {

using nlohmann::json;

int predict_fill_mask(const framework::LoadedModel& lm, const std::string& input, const std::string& output,
                      int64_t batch_size) {
  const std::string field = lm.meta.text_fields.empty() ? "text" : lm.meta.text_fields.front();
  std::ifstream file_in;
  if (input != "-") {
    file_in.open(input, std::ios::binary);
    if (!file_in) throw UserError("--input: cannot read '" + input + "'");
  }
  std::istream& in = input == "-" ? std::cin : file_in;
  const std::string name = input == "-" ? "<stdin>" : input;
  // Every line first (errors before any output), then the texts in batches.
  std::vector<json> results, records;
  std::vector<std::string> texts;
  std::vector<size_t> slot;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) {
      results.push_back({{"error", "blank line"}});
      records.emplace_back();
      continue;
    }
    json record;
    try {
      record = parse_json(line);
    } catch (const std::exception& e) {
      throw UserError(name + ":" + std::to_string(n) + ": not a JSON object (" + e.what() + ")");
    }
    if (!record.is_object() || !record.contains(field) || !record.at(field).is_string())
      throw UserError(name + ":" + std::to_string(n) + ": expected a JSON object with a string field '" + field + "'");
    results.emplace_back();
    records.push_back(record);
    texts.push_back(record.at(field).get<std::string>());
    slot.push_back(results.size() - 1);
  }
  auto model = lm.model;
  const auto fills = framework::fill_mask(*model, *lm.tokenizer, texts, lm.meta.max_seq_length, batch_size, 5);
  for (size_t i = 0; i < fills.size(); ++i) {
    json& r = results[slot[i]];
    if (fills[i].masks.empty()) {
      r = {{"error", "no [MASK] in the text"}};
    } else {
      json masks = json::array();
      for (const auto& m : fills[i].masks) masks.push_back({{"tokens", m.tokens}, {"scores", m.scores}});
      r = {{"masks", masks}};
    }
    r["input"] = records[slot[i]];
  }
  const bool to_stdout = output.empty() || output == "-";
  const std::string tmp = to_stdout ? "" : output + ".tmp";
  std::ofstream file_out;
  if (!to_stdout) {
    file_out.open(tmp, std::ios::binary | std::ios::trunc);
    if (!file_out) throw UserError("--output: cannot write '" + output + "'");
  }
  std::ostream& out = to_stdout ? std::cout : file_out;
  for (const auto& r : results) out << r.dump() << "\n";
  out.flush();
  if (!to_stdout) {
    file_out.close();
    std::error_code ec;
    if (!file_out) {
      std::filesystem::remove(tmp, ec);
      throw UserError("--output: write to '" + output + "' failed");
    }
    std::filesystem::rename(tmp, output, ec);
    if (ec) throw UserError("--output: cannot move the finished output to '" + output + "': " + ec.message());
  }
  return 0;
}

}  // namespace unif::app
