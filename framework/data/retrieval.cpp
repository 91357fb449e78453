// Retrieval dev data: the queries and corpus JSONL files, checked line by line.
#include "framework/data/retrieval.h"

#include <cctype>
#include <cstdint>
#include <fstream>
#include <unordered_map>
#include <unordered_set>

#include "framework/common/error.h"
#include "framework/common/json_input.h"
#include "framework/data/records.h"

namespace unif::framework {
namespace {

constexpr const char* kQueryShape = R"({"id", "text", "relevant": [corpus ids]})";
constexpr const char* kDocumentShape = R"({"id", "text"})";

/// Every non-blank record of a retrieval JSONL file; `what` ("queries", "corpus") names it in messages.
std::vector<Record> read_retrieval_records(const std::filesystem::path& file, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw UserError(file.string() + ": retrieval " + what + " file not found");
  const std::string ext = file.extension().string();
  std::string lower_ext = ext;
  for (auto& c : lower_ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!lower_ext.empty() && lower_ext != ".jsonl" && lower_ext != ".json")
    throw UserError(file.string() + ": retrieval " + what + " files are JSONL (.jsonl, one JSON object a line), got '" +
                    ext + "'");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(file.string() + ": cannot open retrieval " + what + " file");
  RecordReader reader(in, file.string(), RecordFormat::Jsonl);
  std::vector<Record> out;
  for (Record r; reader.next(r);)
    if (!r.fields.is_null()) out.push_back(std::move(r));
  if (out.empty())
    throw UserError(file.string() + ": no " + (what == "corpus" ? std::string("documents") : what) + " in retrieval " +
                    what + " file (expected one " + (what == "corpus" ? kDocumentShape : kQueryShape) + " a line)");
  return out;
}

/// An id as text into `out`: a string as it is, an integer as its decimal digits; false for
/// anything else (the caller reports it).
bool retrieval_id_text(const nlohmann::json& v, std::string& out) {
  if (v.is_string()) {
    out = v.get<std::string>();
    return true;
  }
  if (v.is_number_integer()) {
    out = v.is_number_unsigned() ? std::to_string(v.get<uint64_t>()) : std::to_string(v.get<int64_t>());
    return true;
  }
  return false;
}

std::string retrieval_record_id(const std::filesystem::path& file, const Record& r, const char* shape) {
  const auto it = r.fields.find("id");
  if (it == r.fields.end()) throw UserError(where(file, r) + "missing field 'id' (expected " + shape + ")");
  std::string id;
  if (!retrieval_id_text(*it, id))
    throw UserError(where(file, r) + "field 'id' is " + json_excerpt(*it) + " (expected a string or an integer)");
  if (id.empty()) throw UserError(where(file, r) + "field 'id' is empty (expected a non-empty string or an integer)");
  return id;
}

std::string retrieval_record_text(const std::filesystem::path& file, const Record& r, const char* shape) {
  const auto it = r.fields.find("text");
  if (it == r.fields.end()) throw UserError(where(file, r) + "missing field 'text' (expected " + shape + ")");
  if (!it->is_string())
    throw UserError(where(file, r) + "field 'text' is " + json_excerpt(*it) + " (expected a string)");
  return it->get<std::string>();
}

/// Remembers each id's line; UserError when `id` was seen before.
void check_retrieval_id_unique(std::unordered_map<std::string, int64_t>& seen, const std::string& id,
                               const std::filesystem::path& file, const Record& r, const char* what) {
  const auto [it, fresh] = seen.emplace(id, r.line);
  if (!fresh)
    throw UserError(where(file, r) + what + " id '" + id + "' is already the id of line " + std::to_string(it->second) +
                    " (expected distinct ids)");
}

}  // namespace

std::vector<RetrievalDocument> read_retrieval_corpus(const std::filesystem::path& file) {
  std::vector<RetrievalDocument> out;
  std::unordered_map<std::string, int64_t> seen;
  for (const Record& r : read_retrieval_records(file, "corpus")) {
    RetrievalDocument d;
    d.id = retrieval_record_id(file, r, kDocumentShape);
    d.text = retrieval_record_text(file, r, kDocumentShape);
    d.line = r.line;
    check_retrieval_id_unique(seen, d.id, file, r, "corpus");
    out.push_back(std::move(d));
  }
  return out;
}

RetrievalData read_retrieval_data(const std::filesystem::path& queries, const std::filesystem::path& corpus) {
  RetrievalData data;
  data.corpus = read_retrieval_corpus(corpus);
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < data.corpus.size(); ++i) index.emplace(data.corpus[i].id, i);
  std::unordered_map<std::string, int64_t> seen;
  for (const Record& r : read_retrieval_records(queries, "queries")) {
    RetrievalQuery q;
    q.id = retrieval_record_id(queries, r, kQueryShape);
    q.text = retrieval_record_text(queries, r, kQueryShape);
    q.line = r.line;
    check_retrieval_id_unique(seen, q.id, queries, r, "query");
    const auto it = r.fields.find("relevant");
    if (it == r.fields.end())
      throw UserError(where(queries, r) + "missing field 'relevant' (expected " + kQueryShape + ")");
    if (!it->is_array())
      throw UserError(where(queries, r) + "field 'relevant' is " + json_excerpt(*it) +
                      " (expected a list of corpus ids)");
    if (it->empty())
      throw UserError(where(queries, r) +
                      "field 'relevant' is empty (expected at least one corpus id: a query without relevant "
                      "documents cannot be scored)");
    std::unordered_set<std::string> listed;
    for (std::size_t k = 0; k < it->size(); ++k) {
      std::string id;
      if (!retrieval_id_text((*it)[k], id))
        throw UserError(where(queries, r) + "field 'relevant'[" + std::to_string(k) + "] is " + json_excerpt((*it)[k]) +
                        " (expected a corpus id: a string or an integer)");
      if (!listed.insert(id).second)
        throw UserError(where(queries, r) + "field 'relevant' lists corpus id '" + id + "' twice");
      const auto doc = index.find(id);
      if (doc == index.end())
        throw UserError(where(queries, r) + "relevant id '" + id + "' is not in the corpus (" + corpus.string() + ")");
      q.relevant_ids.push_back(id);
      q.relevant.push_back(doc->second);
    }
    data.queries.push_back(std::move(q));
  }
  return data;
}

}  // namespace unif::framework
