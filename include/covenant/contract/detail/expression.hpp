// covenant/contract/detail/expression.hpp - compile-time inspection of an Expression's hooks.
#pragma once

#include <iterator>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>
#include <type_traits>

#include "covenant/contract/outcome.hpp"
#include "covenant/types/reflect.hpp"

namespace covenant::detail {

template <class M>
struct method_traits {
  static constexpr bool is_method = false;
};

#define COVENANT_METHOD_TRAITS(QUALS, IS_CONST)                    \
  template <class C, class R, class... A>                          \
  struct method_traits<R (C::*)(A...) QUALS> {                     \
    static constexpr bool is_method = true;                        \
    static constexpr bool is_const = IS_CONST;                     \
    static constexpr std::size_t arity = sizeof...(A);             \
    using result = R;                                              \
    template <std::size_t I>                                       \
    using arg = std::tuple_element_t<I, std::tuple<A...>>;         \
  };
COVENANT_METHOD_TRAITS(, false)
COVENANT_METHOD_TRAITS(const, true)
COVENANT_METHOD_TRAITS(noexcept, false)
COVENANT_METHOD_TRAITS(const noexcept, true)
#undef COVENANT_METHOD_TRAITS

template <class T>
struct outcome_arg {
  static constexpr bool ok = false;
  using output = void;
};
template <class O>
struct outcome_arg<const outcome<O>&> {
  static constexpr bool ok = true;
  using output = O;
};

template <class E>
concept has_static_prompt = requires { std::string_view(E::prompt); };
template <class E>
concept has_prompt_function = requires(const E& e) { std::string(e.prompt()); };

/// `static constexpr std::string_view rules[] = {...};` (or any range of things convertible to
/// std::string_view): the rules post() checks, stated so the model sees them before answering.
template <class E>
concept has_rules = requires {
  std::begin(E::rules);
  std::end(E::rules);
  std::string_view(*std::begin(E::rules));
};

template <class E>
concept has_forward = requires { &E::forward; };
template <class E>
concept has_pre = requires { &E::pre; };
template <class E>
concept has_act = requires { &E::act; };
template <class E>
concept has_post = requires { &E::post; };

// Whether E declares a member of the given name in any form (overloaded, template, data): the
// name is then ambiguous in a class deriving from E and from a probe that declares it too.
#define COVENANT_NAMES_MEMBER(NAME)                                                    \
  struct NAME##_probe {                                                                \
    void NAME();                                                                       \
  };                                                                                   \
  template <class E>                                                                   \
  struct NAME##_mix : E, NAME##_probe {};                                              \
  template <class E>                                                                   \
  concept names_##NAME = std::is_class_v<E> && !std::is_final_v<E> && !requires { &NAME##_mix<E>::NAME; };
COVENANT_NAMES_MEMBER(pre)
COVENANT_NAMES_MEMBER(act)
COVENANT_NAMES_MEMBER(post)
COVENANT_NAMES_MEMBER(forward)
#undef COVENANT_NAMES_MEMBER

template <class T>
using bare_t = std::remove_cvref_t<T>;

template <class T>
inline constexpr bool is_const_ref_v = std::is_lvalue_reference_v<T> && std::is_const_v<std::remove_reference_t<T>>;

template <class E>
struct expression_traits {
  static_assert(has_forward<E>,
                "covenant: an Expression needs a non-overloaded, non-template member "
                "`Result forward(const Input&, const covenant::outcome<Output>&) const`");
  using fwd = method_traits<decltype(&E::forward)>;
  static_assert(fwd::is_method && fwd::arity == 2,
                "covenant: forward must be `Result forward(const Input&, const covenant::outcome<Output>&) const`");
  static_assert(fwd::is_const,
                "covenant: forward must be a const member function (a contract may run on many threads at once; "
                "keep per-call data in the input, not on the Expression)");
  static_assert(is_const_ref_v<typename fwd::template arg<0>>,
                "covenant: forward's first parameter must be `const Input&`");
  static_assert(outcome_arg<typename fwd::template arg<1>>::ok,
                "covenant: forward's second parameter must be `const covenant::outcome<Output>&`");

  using input = bare_t<typename fwd::template arg<0>>;
  using output = typename outcome_arg<typename fwd::template arg<1>>::output;
  using result = typename fwd::result;

  static_assert(reflectable_aggregate<input>,
                "covenant: the Expression's input type must be a plain aggregate struct");
  static_assert(reflectable_aggregate<output>,
                "covenant: the Expression's output type must be a plain aggregate struct");
  static_assert(!std::is_void_v<result> && !std::is_reference_v<result>,
                "covenant: forward must return a value (its return value is the call's result)");

  static_assert(has_static_prompt<E> || has_prompt_function<E>,
                "covenant: an Expression needs a fixed task prompt: "
                "`static constexpr std::string_view prompt = \"...\";`");

  static constexpr std::string_view name = type_name_v<E>;

  static_assert(has_pre<E> || !names_pre<E>,
                "covenant: pre must be one non-overloaded, non-template member function "
                "`void pre(const Input&) const` (an overload set or a template would never be called)");
  static_assert(has_act<E> || !names_act<E>,
                "covenant: act must be one non-overloaded, non-template member function "
                "`Intermediate act(const Input&) const` (an overload set or a template would never be called)");
  static_assert(has_post<E> || !names_post<E>,
                "covenant: post must be one non-overloaded, non-template member function "
                "`void post(const Output&) const` (an overload set or a template would never be called)");

  static constexpr bool with_pre = has_pre<E>;
  static constexpr bool with_act = has_act<E>;
  static constexpr bool with_post = has_post<E>;

  static constexpr bool check_pre() {
    if constexpr (with_pre) {
      using m = method_traits<decltype(&E::pre)>;
      static_assert(m::is_method && m::arity == 1 && std::is_void_v<typename m::result>,
                    "covenant: pre must be `void pre(const Input&) const` and signal violations by throwing "
                    "covenant::violation");
      static_assert(m::is_const, "covenant: pre must be a const member function");
      static_assert(std::is_same_v<typename m::template arg<0>, const input&>,
                    "covenant: pre must take `const Input&` (the type forward takes)");
    }
    return true;
  }

  template <bool Has>
  struct act_result {
    using type = input;
  };
  template <bool Dummy>
    requires Dummy
  struct act_result<Dummy> {
    using m = method_traits<decltype(&E::act)>;
    static_assert(m::is_method && m::arity == 1,
                  "covenant: act must be `Intermediate act(const Input&) const`");
    static_assert(m::is_const, "covenant: act must be a const member function");
    static_assert(std::is_same_v<typename m::template arg<0>, const input&>,
                  "covenant: act must take `const Input&` (the type forward takes)");
    using type = bare_t<typename m::result>;
    static_assert(reflectable_aggregate<type>, "covenant: act must return a plain aggregate struct");
  };
  using intermediate = typename act_result<with_act>::type;

  static constexpr int post_arity() {
    if constexpr (with_post) {
      using m = method_traits<decltype(&E::post)>;
      static_assert(m::is_method && (m::arity == 1 || m::arity == 2) && std::is_void_v<typename m::result>,
                    "covenant: post must be `void post(const Output&) const` or "
                    "`void post(const Output&, const Intermediate&) const`, throwing covenant::violation");
      static_assert(m::is_const, "covenant: post must be a const member function");
      static_assert(std::is_same_v<typename m::template arg<0>, const output&>,
                    "covenant: post must take `const Output&` first (the type in forward's outcome)");
      if constexpr (m::arity == 2) {
        static_assert(std::is_same_v<typename m::template arg<1>, const intermediate&>,
                      "covenant: post's second parameter must be `const Intermediate&` (what act returns, or the "
                      "input when there is no act)");
        return 2;
      } else {
        return 1;
      }
    } else {
      return 0;
    }
  }

  static constexpr bool valid = check_pre() && post_arity() >= 0;

  static std::vector<std::string> rules_of() {
    std::vector<std::string> out;
    if constexpr (has_rules<E>) {
      for (const auto& r : E::rules) out.emplace_back(std::string_view(r));
    }
    return out;
  }

  static std::string prompt_of(const E& e) {
    if constexpr (has_static_prompt<E>) return std::string(std::string_view(E::prompt));
    else return std::string(e.prompt());
  }
};

}  // namespace covenant::detail
