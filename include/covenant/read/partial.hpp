// covenant/read/partial.hpp - what a reply shows while it is still being written: the value so far
// and, for every part of it, whether it is finished, still being written, or not started.
//
//     contract.stream(input, [](const covenant::stream_update<Answer>& u) {
//       if (u.partial == nullptr) return;
//       const Answer& so_far = u.partial->value();               // strings and lists growing
//       if (u.partial->state<&Answer::evidence>() == covenant::value_state::complete) ...;
//       u.partial->state("evidence[1].snippet");                 // any path
//     });
//
// What a partial value shows (the same rules as the lenient reader's partial mode):
//   * strings grow as their text arrives; numbers, booleans and null appear once finished;
//   * an enum value or a literal appears only once its string is finished;
//   * lists grow by one element per element started; objects are filled field by field;
//   * a field not started yet keeps its default (C++) or is absent (JSON);
//   * in runtime schemas, a value marked @stream.done appears only once finished.
#pragma once

#include <boost/json/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/types/config.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/types/reflect.hpp"
#include "covenant/types/schema_of.hpp"

namespace covenant {

/// Where a value of a streamed reply stands.
enum class value_state : std::uint8_t {
  absent,     ///< not started (or not in the reply at all)
  streaming,  ///< being written: more of it may come
  complete,   ///< finished
};

/// "absent", "streaming", "complete".
COVENANT_API std::string_view to_string(value_state s) noexcept;

/// The state of every value of a partial reply, by path (`answer`, `evidence[1].snippet`, "" for
/// the whole reply), with JSON keys.
class COVENANT_API partial_states {
 public:
  partial_states();

  /// The state at `path` (rendered like issue paths); absent for a path the reply has not reached.
  [[nodiscard]] value_state state(std::string_view path = {}) const;
  [[nodiscard]] value_state state(const covenant::path& p) const;
  /// Elements of the list at `path` started so far (0 when it is not a list or not started).
  [[nodiscard]] std::size_t items(std::string_view path) const;
  /// Elements of the list at `path` finished so far.
  [[nodiscard]] std::size_t complete_items(std::string_view path) const;

  // Building (the stream readers).
  static constexpr std::uint32_t root = 0;
  static constexpr std::uint32_t none = 0xffffffffu;
  void clear();
  std::uint32_t add_member(std::uint32_t parent, std::string_view key);
  std::uint32_t add_item(std::uint32_t parent);
  void set(std::uint32_t node, value_state s) noexcept { nodes_[node].state = s; }
  [[nodiscard]] value_state at(std::uint32_t node) const noexcept { return nodes_[node].state; }
  /// Every node finished (the reply was read whole).
  void complete_all() noexcept;
  /// The node at `p`, or none.
  [[nodiscard]] std::uint32_t find(const covenant::path& p) const;

 private:
  struct node {
    std::string key;
    std::uint32_t index = 0;
    std::uint32_t first = none;
    std::uint32_t last = none;
    std::uint32_t next = none;
    std::uint32_t count = 0;
    bool is_index = false;
    value_state state = value_state::absent;
  };
  [[nodiscard]] const node* find_text(std::string_view path) const;
  std::uint32_t add(std::uint32_t parent, node n);  // the last child of `parent`, streaming
  std::vector<node> nodes_;
};

namespace detail {
template <class T>
class stream_reader;
class dynamic_stream_reader;
}  // namespace detail

/// A typed partial reply: the value so far and the state of each part.
template <class T>
class partial {
 public:
  /// The output so far (fields not started hold their default member initializers).
  [[nodiscard]] const T& value() const noexcept { return value_; }
  /// The state of the value at `path` ("" for the whole reply).
  [[nodiscard]] value_state state(std::string_view path = {}) const { return states_->state(path); }
  /// The state of a top-level member: state<&Answer::evidence>().
  template <auto Member>
  [[nodiscard]] value_state state() const {
    constexpr std::size_t i = member_index<T, Member>();
    static_assert(i < field_count_v<T>, "covenant::partial::state<&T::m>: m must be a data member of T");
    return states_->state(member_key(i));
  }
  /// Elements of the list at `path` started / finished so far.
  [[nodiscard]] std::size_t items(std::string_view path) const { return states_->items(path); }
  [[nodiscard]] std::size_t complete_items(std::string_view path) const { return states_->complete_items(path); }
  [[nodiscard]] const partial_states& states() const noexcept { return *states_; }

 private:
  friend class detail::stream_reader<T>;
  static std::string_view member_key(std::size_t i);

  T value_{};
  const partial_states* states_ = nullptr;
};

/// A partial reply read against a runtime schema: the JSON value so far and the state of each part.
class COVENANT_API partial_json {
 public:
  partial_json();
  ~partial_json();
  partial_json(const partial_json&) = delete;
  partial_json& operator=(const partial_json&) = delete;

  /// The value so far: objects hold the fields started so far (under their JSON keys).
  [[nodiscard]] const boost::json::value& value() const noexcept { return *value_; }
  [[nodiscard]] value_state state(std::string_view path = {}) const { return states_->state(path); }
  [[nodiscard]] std::size_t items(std::string_view path) const { return states_->items(path); }
  [[nodiscard]] std::size_t complete_items(std::string_view path) const { return states_->complete_items(path); }
  [[nodiscard]] const partial_states& states() const noexcept { return *states_; }

 private:
  friend class detail::dynamic_stream_reader;
  boost::json::value* value_;
  const partial_states* states_ = nullptr;
};

namespace detail {
/// The JSON key of field `i` of T (its alias if any), from T's schema.
COVENANT_API std::string_view object_field_key(const schema::model& m, std::size_t i);
}  // namespace detail

template <class T>
std::string_view partial<T>::member_key(std::size_t i) {
  return detail::object_field_key(schema_of<T>(), i);
}

}  // namespace covenant
