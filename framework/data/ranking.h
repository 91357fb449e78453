// Ranking data for pair models used as rerankers (SPEC §9): a JSONL file of
//
//   {"query": "Who wrote Hamlet?", "texts": ["Hamlet is a tragedy by ...", "..."], "labels": [1, 0]}
//
// one query a line: its candidate texts and a relevance label per text (a number; above 0 is
// relevant). Other fields are ignored; blank lines are skipped. Every problem is a one-line UserError
// "<file>:<line>: ..." (or "<file>: ..." for the file as a whole). framework/metrics/retrieval.h ranks
// each query's texts by the model's scores (ties in text order) with binary relevance.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace unif::framework {

/// One line of a ranking file.
struct RankingGroup {
  std::string query;
  std::vector<std::string> texts;
  std::vector<double> labels;         // one per text
  std::vector<std::size_t> relevant;  // indices of the texts whose label is above 0
  int64_t line = 0;                   // 1-based
};

/// Whether `file` reads as ranking data: a JSONL file whose first non-blank line is an object with
/// "query" and "texts". False for any other file (or one that cannot be read).
bool is_ranking_file(const std::filesystem::path& file);

/// Every line of a ranking file, checked: a JSON object with a string "query", a non-empty list of
/// strings "texts" and a list of finite numbers "labels" as long as "texts". A line whose labels are
/// all 0 or below is read (relevant empty): the caller leaves it out of the metrics and counts it.
/// UserError on a missing or unreadable file, no lines, or a line as above that is not.
std::vector<RankingGroup> read_ranking_file(const std::filesystem::path& file);

}  // namespace unif::framework
