// covenant/detail/stream_reader.hpp - partial results of a reply while it streams, computed
// incrementally, and the violations that justify stopping a stream early.
//
// A stream reader is fed the reply piece by piece. It reads the JSON with a resumable push
// tokenizer of its own (src/push_tokenizer.hpp: a piece may end anywhere, inside a string, an
// escape, a number or a UTF-8 character) and writes each value straight into the partial value (a C++ object through its
// type's value_ops table, or a boost::json::value), keeping the state of every part. Each piece costs
// about its own length: nothing is parsed twice. Text before the value (prose, a ```json fence)
// is skipped. Text that is not JSON (single quotes, unquoted keys, ...) switches the reader to
// re-reading the whole text so far with the lenient reader in partial mode, but only each time
// the text has grown by half since the last reading, so the total work stays linear (not at the
// strict level, which never repairs: there the partial stops where the JSON stopped).
//
// Violations: as soon as a value that is finished in the stream breaks a constraint that no later
// text can fix - a bound, a choice (an enum, a literal, a union of them), a pattern, a length (also a string already longer than
// its maximum while still being written), a format, a list already longer than its maximum, or a
// runtime schema's @assert on a @stream.done value - violations() holds the issues exactly as the
// final decoder reports them (same path, code, message). A value of the wrong type, a missing
// field, a list still too short, or anything read by the lenient fallback is never a violation:
// the final reader may still accept it (coercions).
#pragma once

#include <boost/json/value.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/read/detail/decode_context.hpp"
#include "covenant/read/detail/value_ops.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/read/lenient.hpp"
#include "covenant/read/partial.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/types/schema_of.hpp"

namespace covenant::detail {

/// The compiled core of both readers.
class COVENANT_API stream_core {
 public:
  /// `root` and its table `root_ops`: a C++ value (ops_of<T>()), or a boost::json::value (the
  /// library's JSON table, which dynamic_stream_reader passes).
  stream_core(const schema::model& m, const decode_options& options, strictness level, const value_ops* root_ops,
              void* root);
  ~stream_core();
  stream_core(const stream_core&) = delete;
  stream_core& operator=(const stream_core&) = delete;

  /// A new reply begins (the caller has reset the value).
  void reset();
  /// The next piece; true when what the partial shows changed. Out of memory, the partial stops
  /// there (false from then on); an exception of a check the reader runs (an application's
  /// predicate) propagates, and the reader reads no more of this reply.
  bool feed(std::string_view delta);
  [[nodiscard]] const issue_list& violations() const noexcept;
  /// With violations: the length of the text up to and including the byte at which the first of
  /// them was decided (the byte that finished the value that broke a rule - a closing quote or
  /// bracket, the character after a number, the last letter of a literal - or the character that
  /// took a string past its maximum). It depends on the text alone, not on how it was cut into
  /// pieces. Without violations: the length of the text.
  [[nodiscard]] std::size_t decided_at() const noexcept;
  [[nodiscard]] const partial_states& states() const noexcept;
  /// The reply so far.
  [[nodiscard]] const std::string& text() const noexcept;
  /// The reader fell back to re-reading the text leniently (it is not plain JSON).
  [[nodiscard]] bool lenient() const noexcept;
  /// The paths of the values not finished yet (with JSON keys).
  [[nodiscard]] std::vector<path> unfinished() const;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

template <class T>
class stream_reader {
 public:
  stream_reader(const decode_options& options, strictness level)
      : core_(schema_of<T>(), options, level, &ops_of<T>(), &view_.value_) {
    view_.states_ = &core_.states();
  }
  stream_reader(const stream_reader&) = delete;
  stream_reader& operator=(const stream_reader&) = delete;

  void reset() {
    view_.value_ = T{};
    core_.reset();
  }
  bool feed(std::string_view delta) { return core_.feed(delta); }
  [[nodiscard]] const partial<T>& view() const noexcept { return view_; }
  [[nodiscard]] const issue_list& violations() const noexcept { return core_.violations(); }
  [[nodiscard]] std::size_t decided_at() const noexcept { return core_.decided_at(); }
  [[nodiscard]] const std::string& text() const noexcept { return core_.text(); }
  [[nodiscard]] bool lenient() const noexcept { return core_.lenient(); }

 private:
  partial<T> view_;
  stream_core core_;
};

class COVENANT_API dynamic_stream_reader {
 public:
  dynamic_stream_reader(const schema::model& m, const decode_options& options, strictness level);
  ~dynamic_stream_reader();
  dynamic_stream_reader(const dynamic_stream_reader&) = delete;
  dynamic_stream_reader& operator=(const dynamic_stream_reader&) = delete;

  void reset();
  bool feed(std::string_view delta);
  [[nodiscard]] const partial_json& view() const noexcept { return view_; }
  [[nodiscard]] const issue_list& violations() const noexcept { return core_->violations(); }
  [[nodiscard]] std::size_t decided_at() const noexcept { return core_->decided_at(); }
  [[nodiscard]] const std::string& text() const noexcept { return core_->text(); }
  [[nodiscard]] bool lenient() const noexcept { return core_->lenient(); }

 private:
  schema::model model_;  // a copy: the caller's model may go away first
  boost::json::value value_;
  // With streaming attributes in the model: what they leave out of value_ while a view shows it
  // (moved out of it, and back before the next piece); shown_ is a copy for the rare value that
  // cannot be held back in place.
  bool attributes_ = false;
  struct held;
  std::unique_ptr<held> held_;
  boost::json::value shown_;
  partial_json view_;
  std::unique_ptr<stream_core> core_;
};

}  // namespace covenant::detail
