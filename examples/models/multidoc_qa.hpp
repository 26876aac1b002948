// A multi-document question-answering agent under contract.
//
//   pre      the query is not blank and there is at least one document (ids are unique by schema)
//   act      BM25 retrieval: the best documents for the query, and in them the best sentences
//   post     the answer is not blank, its coverage reaches the agent's minimum, a high coverage
//            claim cites evidence, at most `target_snippet_count` snippets are cited, every snippet
//            comes from a retrieved document and appears in it word for word
//   forward  the validated answer, or a cautious fallback built from the best retrieved sentence
#pragma once

#include <covenant/contract/contract.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qa {

struct Document {
  std::string id;
  std::string content;
};

struct DocSnippet {
  std::string doc_id;
  std::string snippet;
};

struct MultiDocQAInput {
  std::string query;
  std::vector<Document> documents;
  std::optional<int> max_snippets = 3;
};

struct IntermediateRetrieved {
  std::string query;
  std::vector<Document> top_docs;
  std::vector<std::string> selected_sentences;
  int target_snippet_count = 3;
};

struct AnswerWithEvidence {
  std::string answer;
  std::vector<DocSnippet> evidence;
  double coverage_score = 0;
};

}  // namespace qa

template <>
struct covenant::describe<qa::Document> {
  static constexpr std::string_view description = "A document of the corpus.";
  static constexpr auto fields = covenant::fields<qa::Document>(
      covenant::field<&qa::Document::id>("Unique identifier of the document.", covenant::non_empty{}),
      covenant::field<&qa::Document::content>("The full text of the document."));
};

template <>
struct covenant::describe<qa::DocSnippet> {
  static constexpr std::string_view description = "A passage copied word for word from one document.";
  static constexpr auto fields = covenant::fields<qa::DocSnippet>(
      covenant::field<&qa::DocSnippet::doc_id>("Id of the document the snippet comes from.", covenant::non_empty{}),
      covenant::field<&qa::DocSnippet::snippet>("A short excerpt supporting the answer, copied exactly.",
                                                covenant::non_empty{}, covenant::max_length{400}));
};

template <>
struct covenant::describe<qa::MultiDocQAInput> {
  static constexpr auto fields = covenant::fields<qa::MultiDocQAInput>(
      covenant::field<&qa::MultiDocQAInput::query>("User question in plain English.", covenant::non_empty{}),
      covenant::field<&qa::MultiDocQAInput::documents>("Corpus to search for answers.",
                                                       covenant::unique_by<&qa::Document::id>{}),
      covenant::field<&qa::MultiDocQAInput::max_snippets>("Most snippets the answer may cite (default 3).",
                                                          covenant::range{1, 10}));
};

template <>
struct covenant::describe<qa::IntermediateRetrieved> {
  static constexpr auto fields = covenant::fields<qa::IntermediateRetrieved>(
      covenant::field<&qa::IntermediateRetrieved::query>("The user's question."),
      covenant::field<&qa::IntermediateRetrieved::top_docs>("The most relevant documents, best first."),
      covenant::field<&qa::IntermediateRetrieved::selected_sentences>("The sentences most relevant to the question."),
      covenant::field<&qa::IntermediateRetrieved::target_snippet_count>("Most evidence snippets the answer may cite."));
};

template <>
struct covenant::describe<qa::AnswerWithEvidence> {
  static constexpr std::string_view description = "An answer with the passages that support it.";
  static constexpr auto fields = covenant::fields<qa::AnswerWithEvidence>(
      covenant::field<&qa::AnswerWithEvidence::answer>("Concise, stand-alone answer.", covenant::non_empty{}),
      covenant::field<&qa::AnswerWithEvidence::evidence>("Cited supporting passages."),
      covenant::field<&qa::AnswerWithEvidence::coverage_score>(
          "Fraction of the answer directly supported by the evidence (0 = none, 1 = all).",
          covenant::range{0.0, 1.0}));
};

namespace qa {

/// Okapi BM25 over a small in-memory collection of texts.
class bm25 {
 public:
  explicit bm25(const std::vector<std::string>& texts, double k1 = 1.5, double b = 0.75) : k1_(k1), b_(b) {
    docs_.reserve(texts.size());
    double total = 0;
    for (const auto& t : texts) {
      std::map<std::string, int> tf;
      int len = 0;
      for (auto& term : tokenize(t)) {
        ++tf[term];
        ++len;
      }
      for (const auto& [term, n] : tf) {
        (void)n;
        ++df_[term];
      }
      docs_.push_back({std::move(tf), len});
      total += len;
    }
    avg_len_ = docs_.empty() ? 0 : total / static_cast<double>(docs_.size());
  }

  /// BM25 score of text `i` for the query.
  [[nodiscard]] double score(std::size_t i, const std::vector<std::string>& query_terms) const {
    const auto& d = docs_.at(i);
    const double n = static_cast<double>(docs_.size());
    double s = 0;
    for (const auto& term : query_terms) {
      auto it = d.tf.find(term);
      if (it == d.tf.end()) continue;
      const double df = static_cast<double>(df_.at(term));
      const double idf = std::log((n - df + 0.5) / (df + 0.5) + 1.0);
      const double tf = it->second;
      const double norm = avg_len_ > 0 ? static_cast<double>(d.length) / avg_len_ : 1.0;
      s += idf * tf * (k1_ + 1) / (tf + k1_ * (1 - b_ + b_ * norm));
    }
    return s;
  }

  /// Indexes of the `k` best texts for the query, best first (ties keep the original order).
  [[nodiscard]] std::vector<std::size_t> top(std::string_view query, std::size_t k) const {
    const auto terms = tokenize(query);
    std::vector<std::pair<double, std::size_t>> scored;
    for (std::size_t i = 0; i < docs_.size(); ++i) scored.emplace_back(score(i, terms), i);
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < scored.size() && i < k; ++i) out.push_back(scored[i].second);
    return out;
  }

  /// Lower-cased alphanumeric words, without common English stop words.
  static std::vector<std::string> tokenize(std::string_view text) {
    static const std::set<std::string, std::less<>> stop = {
        "a",  "an",  "and",  "are", "as",   "at",   "be",  "by",   "can", "do",  "for", "from", "how", "in",
        "is", "it",  "its",  "of",  "on",   "or",   "so",  "that", "the", "to",  "was", "what", "when",
        "where", "which", "who", "why", "with", "they", "their", "them", "this", "these", "those", "while"};
    std::vector<std::string> out;
    std::string word;
    auto flush = [&] {
      if (!word.empty() && !stop.contains(word)) out.push_back(word);
      word.clear();
    };
    for (char c : text) {
      const auto u = static_cast<unsigned char>(c);
      if (std::isalnum(u) || u >= 0x80) word.push_back(static_cast<char>(std::tolower(u)));
      else flush();
    }
    flush();
    return out;
  }

 private:
  struct doc {
    std::map<std::string, int> tf;
    int length = 0;
  };
  std::vector<doc> docs_;
  std::map<std::string, int> df_;
  double avg_len_ = 0;
  double k1_;
  double b_;
};

/// Sentences of a text (split after '.', '!' or '?').
inline std::vector<std::string> sentences(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 0; i < text.size(); ++i) {
    cur.push_back(text[i]);
    const bool end = text[i] == '.' || text[i] == '!' || text[i] == '?';
    if (end && (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n')) {
      const auto b = cur.find_first_not_of(" \n\t");
      if (b != std::string::npos) out.push_back(cur.substr(b));
      cur.clear();
    }
  }
  const auto b = cur.find_first_not_of(" \n\t");
  if (b != std::string::npos) out.push_back(cur.substr(b));
  return out;
}

/// Lower case with runs of whitespace folded, to compare quotations.
inline std::string folded(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isspace(u)) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(static_cast<char>(std::tolower(u)));
  }
  return out;
}

struct MultiDocQA {
  static constexpr std::string_view prompt =
      "You are an expert research assistant. Given a QUESTION and RELEVANT_SENTENCES taken from the top "
      "documents, write a concise answer. Support it with evidence snippets copied word for word from those "
      "documents, citing each document by its id, and estimate which fraction of the answer the evidence "
      "supports.";

  double min_coverage = 0.55;  ///< configuration, the same for every call

  void pre(const MultiDocQAInput& in) const {
    covenant::violation v;
    if (in.query.find_first_not_of(" \t\n") == std::string::npos) v.add("query", "must not be blank");
    if (in.documents.empty()) v.add("documents", "must contain at least one document");
    v.raise_if_any();
  }

  IntermediateRetrieved act(const MultiDocQAInput& in) const {
    std::vector<std::string> texts;
    for (const auto& d : in.documents) texts.push_back(d.content);
    const bm25 index(texts);
    IntermediateRetrieved out;
    out.query = in.query;
    out.target_snippet_count = in.max_snippets.value_or(3);
    const auto top = index.top(in.query, std::min<std::size_t>(3, in.documents.size()));
    for (std::size_t i : top) {
      const Document& d = in.documents[i];
      out.top_docs.push_back(d);
      // The two best sentences of the document, by BM25 over its sentences.
      const auto sents = sentences(d.content);
      const bm25 inner(sents);
      for (std::size_t s : inner.top(in.query, 2)) out.selected_sentences.push_back(sents[s]);
    }
    return out;
  }

  void post(const AnswerWithEvidence& a, const IntermediateRetrieved& ctx) const {
    covenant::violation v;
    if (a.answer.find_first_not_of(" \t\n") == std::string::npos) v.add("answer", "must not be blank");
    if (a.coverage_score < min_coverage) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "must be at least %.2f; cite more evidence or answer more narrowly (got %.2f)",
                    min_coverage, a.coverage_score);
      v.add("coverage_score", buf);
    }
    if (a.coverage_score >= 0.8 && a.evidence.empty())
      v.add("evidence", "a coverage score of 0.8 or more needs at least one evidence snippet");
    if (static_cast<int>(a.evidence.size()) > ctx.target_snippet_count)
      v.add("evidence", "must have at most " + std::to_string(ctx.target_snippet_count) + " snippets (got " +
                            std::to_string(a.evidence.size()) + ")");
    for (std::size_t i = 0; i < a.evidence.size(); ++i) {
      const DocSnippet& s = a.evidence[i];
      const auto doc = std::find_if(ctx.top_docs.begin(), ctx.top_docs.end(),
                                    [&](const Document& d) { return d.id == s.doc_id; });
      const std::string at = "evidence[" + std::to_string(i) + "]";
      if (doc == ctx.top_docs.end()) {
        std::string ids;
        for (const auto& d : ctx.top_docs) ids += (ids.empty() ? "" : ", ") + d.id;
        v.add(at + ".doc_id", "must be one of the retrieved documents: " + ids + " (got \"" + s.doc_id + "\")");
      } else if (folded(doc->content).find(folded(s.snippet)) == std::string::npos) {
        v.add(at + ".snippet", "must be copied word for word from document " + s.doc_id);
      }
    }
    v.raise_if_any();
  }

  AnswerWithEvidence forward(const MultiDocQAInput& in, const covenant::outcome<AnswerWithEvidence>& o) const {
    if (o.success) return *o.result;
    AnswerWithEvidence fallback;
    fallback.answer =
        "I am not confident enough to answer precisely. Please rephrase the question or provide more documents.";
    fallback.coverage_score = 0.0;
    // The sentence of the whole corpus that BM25 ranks best for the query, as a pointer.
    std::vector<std::string> texts;
    std::vector<const Document*> owner;
    for (const auto& d : in.documents) {
      for (auto& s : sentences(d.content)) {
        texts.push_back(std::move(s));
        owner.push_back(&d);
      }
    }
    if (!texts.empty()) {
      const auto best = bm25(texts).top(in.query, 1);
      if (!best.empty()) fallback.evidence.push_back({owner[best[0]]->id, texts[best[0]].substr(0, 300)});
    }
    return fallback;
  }
};

}  // namespace qa
