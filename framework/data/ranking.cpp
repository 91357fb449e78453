// Ranking data: one query with its candidate texts and their relevance labels a line.
#include "framework/data/ranking.h"

#include <cmath>
#include <fstream>

#include "framework/common/error.h"
#include "framework/common/json_input.h"
#include "framework/data/records.h"

namespace unif::framework {
namespace {

constexpr const char* kRankingShape = R"({"query": "...", "texts": ["...", ...], "labels": [relevance, ...]})";

}  // namespace

bool is_ranking_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return false;
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  try {
    RecordReader reader(in, file.string(), RecordFormat::Jsonl);
    for (Record r; reader.next(r);)
      if (!r.fields.is_null()) return r.fields.contains("query") && r.fields.contains("texts");
  } catch (const UserError&) {}
  return false;
}

std::vector<RankingGroup> read_ranking_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) throw UserError(file.string() + ": ranking file not found");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(file.string() + ": cannot open ranking file");
  RecordReader reader(in, file.string(), RecordFormat::Jsonl);
  std::vector<RankingGroup> out;
  for (Record r; reader.next(r);) {
    if (r.fields.is_null()) continue;
    const auto& f = r.fields;
    const auto missing = [&](const char* key) {
      return UserError(where(file, r) + "missing field '" + key + "' (expected " + kRankingShape + ")");
    };
    RankingGroup g;
    g.line = r.line;
    const auto q = f.find("query");
    if (q == f.end()) throw missing("query");
    if (!q->is_string())
      throw UserError(where(file, r) + "field 'query' is " + json_excerpt(*q) + " (expected a string)");
    g.query = q->get<std::string>();
    const auto t = f.find("texts");
    if (t == f.end()) throw missing("texts");
    if (!t->is_array() || t->empty())
      throw UserError(where(file, r) + "field 'texts' is " + json_excerpt(*t) +
                      " (expected a non-empty list of strings)");
    for (size_t i = 0; i < t->size(); ++i) {
      if (!(*t)[i].is_string())
        throw UserError(where(file, r) + "texts[" + std::to_string(i) + "] is " + json_excerpt((*t)[i]) +
                        " (expected a string)");
      g.texts.push_back((*t)[i].get<std::string>());
    }
    const auto l = f.find("labels");
    if (l == f.end()) throw missing("labels");
    if (!l->is_array() || l->size() != g.texts.size())
      throw UserError(where(file, r) + "field 'labels' is " + json_excerpt(*l) + " (expected a list of " +
                      std::to_string(g.texts.size()) + " numbers, one per text)");
    for (size_t i = 0; i < l->size(); ++i) {
      const auto& v = (*l)[i];
      const bool number = v.is_number() || v.is_boolean();
      const double x = v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : number ? v.get<double>() : 0.0;
      if (!number || !std::isfinite(x))
        throw UserError(where(file, r) + "labels[" + std::to_string(i) + "] is " + json_excerpt(v) +
                        " (expected a number: the text's relevance, above 0 relevant)");
      g.labels.push_back(x);
      if (x > 0) g.relevant.push_back(i);
    }
    out.push_back(std::move(g));
  }
  if (out.empty())
    throw UserError(file.string() + ": no queries in ranking file (expected one " + kRankingShape + " a line)");
  return out;
}

}  // namespace unif::framework
