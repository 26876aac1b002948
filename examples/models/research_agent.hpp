// A research agent under contract: the multi-document QA agent (examples/models/multidoc_qa.hpp)
// that looks things up itself, with two tools over a small corpus.
//
//   corpus   eight short articles about the city of Carrow, its tram lines and its observatory;
//            some questions need two of them (which line serves a place is in one article, when
//            that line opened in another)
//   search   BM25 over the corpus (qa::bm25): the best documents for a query, each with its id,
//            title and the sentence that matches the query best
//   open     the full text of one document; pre() refuses an id that is not in the corpus and
//            tells the model to search first
//   post     multidoc_qa's rules over the whole corpus: the answer is not blank, its coverage
//            reaches the minimum, a high coverage claim cites evidence, at most `max_snippets`
//            snippets are cited, every snippet names a corpus document and appears in it word for
//            word
//   forward  the validated answer, or multidoc_qa's cautious fallback built from the corpus
#pragma once

#include <covenant/contract/contract.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "multidoc_qa.hpp"

namespace research {

/// One article of the corpus.
struct Article {
  std::string id;
  std::string title;
  std::string text;
};

/// The articles, indexed for search once.
class Corpus {
 public:
  explicit Corpus(std::vector<Article> articles) : articles_(std::move(articles)), index_(searchable(articles_)) {
    for (const auto& a : articles_) documents_.push_back({a.id, a.text});
  }

  [[nodiscard]] const std::vector<Article>& articles() const noexcept { return articles_; }
  /// The articles as multidoc_qa's documents (id and text).
  [[nodiscard]] const std::vector<qa::Document>& documents() const noexcept { return documents_; }

  /// The article with this id, or null.
  [[nodiscard]] const Article* find(std::string_view id) const {
    const auto it = std::find_if(articles_.begin(), articles_.end(), [&](const Article& a) { return a.id == id; });
    return it == articles_.end() ? nullptr : &*it;
  }

  /// The `k` articles that match the query best (titles count too), best first; articles sharing
  /// no word with the query are left out.
  [[nodiscard]] std::vector<const Article*> search(std::string_view query, std::size_t k) const {
    const auto terms = qa::bm25::tokenize(query);
    std::vector<const Article*> out;
    for (std::size_t i : index_.top(query, k))
      if (index_.score(i, terms) > 0) out.push_back(&articles_[i]);
    return out;
  }

 private:
  static std::vector<std::string> searchable(const std::vector<Article>& articles) {
    std::vector<std::string> texts;
    for (const auto& a : articles) texts.push_back(a.title + ". " + a.text);
    return texts;
  }

  std::vector<Article> articles_;
  std::vector<qa::Document> documents_;
  qa::bm25 index_;
};

/// The corpus the agent researches.
inline const Corpus& carrow() {
  static const Corpus corpus{{
      {"trams-overview", "Trams in Carrow",
       "Carrow has three tram lines: the Harbour Line, the Hill Line and the Ring Line. The network is run by the "
       "Carrow Tramways Company, founded in 1909. A single ticket costs 2.40 and is valid for one hour on every "
       "line."},
      {"harbour-line", "The Harbour Line",
       "The Harbour Line is the oldest tram route in Carrow. It opened on 4 May 1911 and ran from Central Station "
       "along the quay to the fish market. Its cars were drawn by horses until the line was electrified in 1924. "
       "In 1968 the line was extended up Mount Carrow to a new terminus, Carrow Gate."},
      {"hill-line", "The Hill Line",
       "The Hill Line climbs the eastern slope of Mount Carrow to the botanical garden. It opened in 1936 and is "
       "the steepest tram route in the city, with gradients of up to nine per cent. It does not reach the summit."},
      {"ring-line", "The Ring Line",
       "The Ring Line circles the old town in both directions. It opened in 1952, the youngest of the three "
       "lines, and replaced the town's last horse buses."},
      {"carrow-observatory", "Carrow Observatory",
       "Carrow Observatory stands on the summit of Mount Carrow, 412 metres above the harbour. It opened to the "
       "public in 1932 with a 60-centimetre reflecting telescope. Visitors come up by tram: the Harbour Line stops "
       "at Carrow Gate, a ten-minute walk below the dome. The observatory is open on clear evenings from April to "
       "October."},
      {"ada-lindqvist", "Ada Lindqvist",
       "Ada Lindqvist (1881-1957) was an instrument maker from Carrow. She ground the mirror of the observatory's "
       "reflecting telescope in her workshop on the quay, a task that took her four years."},
      {"botanical-garden", "Carrow Botanical Garden",
       "The botanical garden on the eastern slope of Mount Carrow was founded in 1879. Its glasshouses hold the "
       "largest collection of tree ferns in the country. The Hill Line stops at its main gate."},
      {"fish-market", "The Quay Fish Market",
       "The fish market on the old quay has traded since 1790. Boats land their catch before dawn, and the "
       "auction starts at six in the morning. The market hall was rebuilt in stone after the fire of 1898."},
  }};
  return corpus;
}

/// The question to research.
struct Question {
  std::string question;
};

struct SearchArgs {
  std::string query;
  int k = 3;
};

/// One document that matches a search.
struct Hit {
  std::string doc_id;
  std::string title;
  std::string snippet;
};

struct SearchHits {
  std::vector<Hit> hits;
};

struct OpenArgs {
  std::string doc_id;
};

struct OpenedDocument {
  std::string doc_id;
  std::string title;
  std::string text;
};

}  // namespace research

template <>
struct covenant::describe<research::Question> {
  static constexpr auto fields = covenant::fields<research::Question>(
      covenant::field<&research::Question::question>("The question to answer from the corpus.",
                                                     covenant::non_empty{}));
};

template <>
struct covenant::describe<research::SearchArgs> {
  static constexpr auto fields = covenant::fields<research::SearchArgs>(
      covenant::field<&research::SearchArgs::query>("Keywords to look for, such as names, places and events.",
                                                    covenant::non_empty{}),
      covenant::field<&research::SearchArgs::k>("How many documents to return, best first.", covenant::range{1, 5}));
};

template <>
struct covenant::describe<research::Hit> {
  static constexpr std::string_view description = "A document that matches the query.";
  static constexpr auto fields = covenant::fields<research::Hit>(
      covenant::field<&research::Hit::doc_id>("Id of the document: what `open` takes."),
      covenant::field<&research::Hit::title>("Title of the document."),
      covenant::field<&research::Hit::snippet>("The sentence of the document that matches the query best."));
};

template <>
struct covenant::describe<research::SearchHits> {
  static constexpr std::string_view description = "The documents that match the query, best first.";
  static constexpr auto fields = covenant::fields<research::SearchHits>(
      covenant::field<&research::SearchHits::hits>("The matching documents (none when no document matches)."));
};

template <>
struct covenant::describe<research::OpenArgs> {
  static constexpr auto fields = covenant::fields<research::OpenArgs>(
      covenant::field<&research::OpenArgs::doc_id>("Id of the document to read, as a search hit gives it.",
                                                   covenant::non_empty{}));
};

template <>
struct covenant::describe<research::OpenedDocument> {
  static constexpr std::string_view description = "A document of the corpus, in full.";
  static constexpr auto fields = covenant::fields<research::OpenedDocument>(
      covenant::field<&research::OpenedDocument::doc_id>("Id of the document."),
      covenant::field<&research::OpenedDocument::title>("Title of the document."),
      covenant::field<&research::OpenedDocument::text>("The full text: evidence is copied from it word for word."));
};

namespace research {

/// The search tool: BM25 over the corpus.
struct Search {
  static constexpr std::string_view name = "search";
  static constexpr std::string_view description =
      "Searches the corpus. Returns the best matching documents with their ids, titles and the sentence that "
      "matches best.";
  static constexpr bool quick = true;  // an in-memory lookup
  /// Longest snippet, in bytes.
  static constexpr std::size_t snippet_length = 200;

  const Corpus* corpus = nullptr;

  SearchHits act(const SearchArgs& a) const {
    SearchHits out;
    for (const Article* article : corpus->search(a.query, static_cast<std::size_t>(a.k))) {
      // The sentence of the article that BM25 ranks best for the query.
      const auto sents = qa::sentences(article->text);
      std::string snippet = sents.empty() ? std::string() : sents[qa::bm25(sents).top(a.query, 1).at(0)];
      if (snippet.size() > snippet_length) {
        const auto cut = snippet.rfind(' ', snippet_length);
        snippet = snippet.substr(0, cut == std::string::npos ? snippet_length : cut) + " ...";
      }
      out.hits.push_back({article->id, article->title, std::move(snippet)});
    }
    return out;
  }
};

/// The open tool: one document in full.
struct Open {
  static constexpr std::string_view name = "open";
  static constexpr std::string_view description =
      "Opens a document of the corpus by its id and returns its full text.";
  static constexpr bool quick = true;  // an in-memory lookup

  const Corpus* corpus = nullptr;

  void pre(const OpenArgs& a) const {
    if (corpus->find(a.doc_id) == nullptr)
      throw covenant::violation("doc_id", "no document has the id \"" + a.doc_id +
                                              "\"; call search first and open a doc_id from its hits");
  }
  OpenedDocument act(const OpenArgs& a) const {
    const Article& article = *corpus->find(a.doc_id);
    return {article.id, article.title, article.text};
  }
};

/// The agent: searches, opens what it needs and answers with evidence.
struct ResearchAgent {
  static constexpr std::string_view prompt =
      "You are a careful research assistant with a corpus of documents you can only reach through tools. "
      "Answer the QUESTION from the corpus: call `search` to find the documents that may hold the answer "
      "(several searches at once when the question has several parts), then `open` the documents you need, "
      "using the doc_id of a search hit. When you know the answer, write a concise answer, support it with "
      "evidence snippets copied word for word from the opened documents, citing each by its doc_id, and "
      "estimate which fraction of the answer the evidence supports.";
  static constexpr std::string_view rules[] = {
      "the answer is not blank",
      "the coverage score is at least 0.6",
      "a coverage score of 0.8 or more cites at least one evidence snippet",
      "at most 3 evidence snippets",
      "every snippet's doc_id is the id of a corpus document, and the snippet is copied word for word from that "
      "document's text",
  };

  static constexpr double min_coverage = 0.6;
  static constexpr int max_snippets = 3;

  const Corpus* corpus = &carrow();
  covenant::toolset<Search, Open> tools{Search{corpus}, Open{corpus}};

  // multidoc_qa's rules, with the whole corpus as the documents the evidence may come from.
  void post(const qa::AnswerWithEvidence& a, const Question& q) const {
    const qa::IntermediateRetrieved everything{q.question, corpus->documents(), {}, max_snippets};
    qa::MultiDocQA{.min_coverage = min_coverage}.post(a, everything);
  }

  qa::AnswerWithEvidence forward(const Question& q, const covenant::outcome<qa::AnswerWithEvidence>& o) const {
    return qa::MultiDocQA{.min_coverage = min_coverage}.forward(
        qa::MultiDocQAInput{q.question, corpus->documents(), max_snippets}, o);
  }
};

}  // namespace research
