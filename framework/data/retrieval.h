// Retrieval dev data (SPEC §9 `data.retrieval: {queries: FILE, corpus: FILE}`): two JSONL files,
//
//   queries  {"id": "q1", "text": "Who wrote Hamlet?", "relevant": ["d7", "d9"]}
//   corpus   {"id": "d7", "text": "Hamlet is a tragedy written by William Shakespeare ..."}
//
// one object a line. An id is a string or an integer; an integer is read as its decimal text
// (7 -> "7"), so 7 and "7" name the same document. A query lists at least one relevant corpus id,
// each once, each in the corpus; ids are distinct within each file; other fields are ignored;
// blank lines are skipped. What the files hold is checked on reading: every problem is a one-line
// UserError "<file>:<line>: ..." (or "<file>: ..." for the file as a whole).
//
// The queries' `relevant` indices and the corpus ids are framework/metrics/retrieval.h's input: rank
// the corpus for each query (a score per document, in corpus order) and pass the corpus ids, so
// ties rank as sentence-transformers ranks them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace unif::framework {

/// One corpus line.
struct RetrievalDocument {
  std::string id;
  std::string text;
  int64_t line = 0;  // 1-based line in the corpus file
};

/// One queries line, its relevant ids resolved against the corpus.
struct RetrievalQuery {
  std::string id;
  std::string text;
  std::vector<std::string> relevant_ids;  // as listed (integers as decimal text)
  std::vector<std::size_t> relevant;      // the same documents as indices into RetrievalData::corpus
  int64_t line = 0;                       // 1-based line in the queries file
};

/// Both files, each in file order.
struct RetrievalData {
  std::vector<RetrievalQuery> queries;
  std::vector<RetrievalDocument> corpus;
};

/// Reads a corpus file. UserError for a missing file, an extension other than JSONL's (.jsonl,
/// .json or none), invalid JSON or UTF-8, a line that is no object, a missing or non-string `text`,
/// a missing, empty or non-string non-integer `id`, an id used twice, or no documents.
std::vector<RetrievalDocument> read_retrieval_corpus(const std::filesystem::path& file);

/// Reads the queries file and the corpus file, and resolves each query's relevant ids. UserError as
/// read_retrieval_corpus for either file, and for a query whose `relevant` is missing, not a list,
/// empty, holds an entry that is no string or integer, lists an id twice, or names an id the corpus
/// does not hold; or no queries.
RetrievalData read_retrieval_data(const std::filesystem::path& queries, const std::filesystem::path& corpus);

}  // namespace unif::framework
